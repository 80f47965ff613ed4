package node

import (
	"fmt"
	"os"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/model/anthropic"
	"github.com/wardenhq/warden/model/openai"
)

// models builds the configured model providers. Keys are read from the
// environment here and never enter workflow history.
func models(cfg map[string]config.Model) (map[string]model.Model, error) {
	out := map[string]model.Model{}
	for name, m := range cfg {
		var (
			p   model.Model
			err error
		)
		switch m.Kind {
		case "openai":
			key := os.Getenv(orDefault(m.APIKeyEnv, "OPENAI_API_KEY"))
			p, err = openai.New(openai.Config{BaseURL: m.BaseURL, APIKey: key, Model: m.Model, MaxTokens: m.MaxTokens, Stream: m.Stream})
		case "anthropic":
			key := os.Getenv(orDefault(m.APIKeyEnv, "ANTHROPIC_API_KEY"))
			p, err = anthropic.New(anthropic.Config{BaseURL: m.BaseURL, APIKey: key, Model: m.Model, MaxTokens: m.MaxTokens, Stream: m.Stream})
		default:
			err = fmt.Errorf("unknown kind %q", m.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("models.%s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// prices is the price table of the configuration.
func prices(cfg map[string]config.Price) map[string]model.Price {
	if len(cfg) == 0 {
		return nil
	}
	out := make(map[string]model.Price, len(cfg))
	for name, p := range cfg {
		out[name] = model.Price{Input: p.Input, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite, Output: p.Output}
	}
	return out
}
