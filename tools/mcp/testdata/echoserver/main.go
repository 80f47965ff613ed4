// Command echoserver serves the echo MCP server over stdio.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/tools/mcp/internal/echoserver"
)

func main() {
	if err := echoserver.New().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
