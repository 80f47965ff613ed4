package client

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/wardenhq/warden/workflows"
)

// SearchAttributes are the custom search attributes warden's workflow
// sets on a waiting turn, by name and type (warden.SearchAttributes).
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		workflows.SAPendingCalls: enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		workflows.SAPendingTools: enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		workflows.SAWaitingSince: enumspb.INDEXED_VALUE_TYPE_DATETIME,
		workflows.SASessionState: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// CreateSearchAttributesCommand is the Temporal CLI command that creates
// attrs in namespace; address, when not empty, is passed as --address.
func CreateSearchAttributesCommand(address, namespace string, attrs map[string]enumspb.IndexedValueType) string {
	var b strings.Builder
	b.WriteString("temporal operator search-attribute create")
	if address != "" {
		fmt.Fprintf(&b, " --address %s", address)
	}
	fmt.Fprintf(&b, " --namespace %s", namespace)
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Fprintf(&b, " --name %s --type %s", name, SearchAttributeType(attrs[name]))
	}
	return b.String()
}

// CloudSearchAttributesCommand is the tcld command that creates attrs in
// a Temporal Cloud namespace (NAME.ACCOUNT), where the operator service
// that the Temporal CLI's command calls is refused.
func CloudSearchAttributesCommand(namespace string, attrs map[string]enumspb.IndexedValueType) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tcld namespace search-attributes add --namespace %s", namespace)
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Fprintf(&b, " --search-attribute %q", name+"="+SearchAttributeType(attrs[name]))
	}
	return b.String()
}

// SearchAttributeType is the name the Temporal CLI and tcld give a search
// attribute type (KeywordList, Datetime...).
func SearchAttributeType(t enumspb.IndexedValueType) string {
	switch t {
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST:
		return "KeywordList"
	case enumspb.INDEXED_VALUE_TYPE_DATETIME:
		return "Datetime"
	case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
		return "Keyword"
	case enumspb.INDEXED_VALUE_TYPE_TEXT:
		return "Text"
	case enumspb.INDEXED_VALUE_TYPE_INT:
		return "Int"
	case enumspb.INDEXED_VALUE_TYPE_DOUBLE:
		return "Double"
	case enumspb.INDEXED_VALUE_TYPE_BOOL:
		return "Bool"
	}
	return t.String()
}

// ErrNoSearchAttributes is wrapped by the error of a listing (ListPending,
// ListPendingPage) in a namespace that lacks warden's search attributes;
// the error says how to create them.
var ErrNoSearchAttributes = errors.New("the namespace lacks warden's search attributes")

// explainListing turns the server's refusal of a visibility query that
// names warden's search attributes, in a namespace without them, into
// ErrNoSearchAttributes with the commands that create them; other errors
// are returned as they are.
func (cl *Client) explainListing(err error) error {
	var invalid *serviceerror.InvalidArgument
	if !errors.As(err, &invalid) {
		return err
	}
	attrs := SearchAttributes()
	named := slices.ContainsFunc(slices.Collect(maps.Keys(attrs)), func(name string) bool {
		return strings.Contains(invalid.Error(), name)
	})
	if !named {
		return err
	}
	ns := cl.Namespace
	if ns == "" {
		ns = "NAMESPACE"
	}
	return fmt.Errorf("%w %s (%v): create them as an administrator of the namespace, with the same --address and TLS or API-key flags as your other temporal commands:\n  %s\n"+
		"on Temporal Cloud:\n  %s\n(a worker does this at start: warden.EnsureSearchAttributes)",
		ErrNoSearchAttributes, strings.Join(slices.Sorted(maps.Keys(attrs)), ", "), err,
		CreateSearchAttributesCommand("", ns, attrs), CloudSearchAttributesCommand(ns, attrs))
}
