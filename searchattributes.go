package warden

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	wardenclient "github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// SearchAttributes are the custom search attributes warden's workflow
// sets on a waiting turn, by name and type. A namespace that lacks them
// fails every workflow task of a turn that parks a call
// (BadSearchAttributes); EnsureSearchAttributes creates them.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		workflows.SAPendingCalls: enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		workflows.SAPendingTools: enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		workflows.SAWaitingSince: enumspb.INDEXED_VALUE_TYPE_DATETIME,
	}
}

// MissingSearchAttributesError is returned by EnsureSearchAttributes when
// the namespace lacks some of warden's search attributes and they could
// not be created with the client's credentials (or the server does not
// offer the operator service, as on a hosted one). Command gives the
// Temporal CLI command an administrator of the namespace runs.
type MissingSearchAttributesError struct {
	// Namespace is the namespace that lacks them.
	Namespace string
	// Missing are the attributes to create, by name and type.
	Missing map[string]enumspb.IndexedValueType
	// Err is why the server refused to create them.
	Err error
}

// Error says what is missing, why it was not created and how to create it.
func (e *MissingSearchAttributesError) Error() string {
	return fmt.Sprintf("namespace %s lacks warden's search attributes %s and they could not be created with these credentials: %v\n"+
		"create them as an administrator of the namespace (with the same --address and TLS or API-key flags as your other temporal commands):\n  %s",
		e.Namespace, strings.Join(slices.Sorted(maps.Keys(e.Missing)), ", "), e.Err, e.Command(""))
}

// Unwrap returns the server's refusal.
func (e *MissingSearchAttributesError) Unwrap() error { return e.Err }

// Command is the Temporal CLI command that creates the missing
// attributes; address, when not empty, is passed as --address.
func (e *MissingSearchAttributesError) Command(address string) string {
	var b strings.Builder
	b.WriteString("temporal operator search-attribute create")
	if address != "" {
		fmt.Fprintf(&b, " --address %s", address)
	}
	fmt.Fprintf(&b, " --namespace %s", e.Namespace)
	for _, name := range slices.Sorted(maps.Keys(e.Missing)) {
		fmt.Fprintf(&b, " --name %s --type %s", name, cliType(e.Missing[name]))
	}
	return b.String()
}

// cliType is the Temporal CLI's name for a search attribute type.
func cliType(t enumspb.IndexedValueType) string {
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

// EnsureSearchAttributes checks that namespace has warden's search
// attributes (SearchAttributes) and creates the missing ones through the
// operator service, which needs an administrator's credentials on a
// server with an authorizer. It returns the names it created (none when
// all were there). When they cannot be created it returns a
// *MissingSearchAttributesError whose message carries the `temporal
// operator search-attribute create` command to run; an attribute that
// exists with another type is an error too (a type cannot be changed).
//
// Call it once before the worker starts (cmd/worker does): a worker
// whose namespace lacks them polls and runs turns until the first one
// parks a call, whose workflow tasks then fail and are retried until the
// attributes exist.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	want := SearchAttributes()
	missing, err := missingSearchAttributes(ctx, c, namespace, want)
	if err != nil || len(missing) == 0 {
		return nil, err
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	if err != nil && !errors.As(err, new(*serviceerror.AlreadyExists)) {
		return nil, &MissingSearchAttributesError{Namespace: namespace, Missing: missing, Err: wardenclient.Explain(err)}
	}
	created := slices.Sorted(maps.Keys(missing))
	// The server's services load new attributes within seconds (each
	// caches the namespace's mapping); wait until the frontend accepts a
	// query on them, so that the first turns do not fail their workflow
	// tasks while the mapping spreads.
	clauses := make([]string, len(created))
	for i, name := range created {
		clauses[i] = name + " IS NULL"
	}
	query := strings.Join(clauses, " AND ")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query}); err == nil {
			break
		} else if time.Now().After(deadline) {
			return created, fmt.Errorf("search attributes %s created in namespace %s but not yet usable: %w", strings.Join(created, ", "), namespace, err)
		}
		select {
		case <-ctx.Done():
			return created, fmt.Errorf("waiting for search attributes: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	if again, err := missingSearchAttributes(ctx, c, namespace, want); err != nil {
		return created, err
	} else if len(again) > 0 {
		return created, fmt.Errorf("namespace %s still lacks search attributes %s after creating them", namespace, strings.Join(slices.Sorted(maps.Keys(again)), ", "))
	}
	return created, nil
}

// missingSearchAttributes lists the namespace's custom attributes and
// returns those of want it lacks; one with another type is an error.
func missingSearchAttributes(ctx context.Context, c client.Client, namespace string, want map[string]enumspb.IndexedValueType) (map[string]enumspb.IndexedValueType, error) {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		if errors.As(err, new(*serviceerror.NamespaceNotFound)) {
			return nil, fmt.Errorf("namespace %s does not exist: create it with `temporal operator namespace create --namespace %s --retention 72h` (as an administrator of the cluster): %w", namespace, namespace, err)
		}
		return nil, fmt.Errorf("list search attributes of namespace %s: %w", namespace, wardenclient.Explain(err))
	}
	missing := map[string]enumspb.IndexedValueType{}
	var wrong []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		typ, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = want[name]
		case typ != want[name]:
			wrong = append(wrong, fmt.Sprintf("%s is %s, warden needs %s", name, cliType(typ), cliType(want[name])))
		}
	}
	if len(wrong) > 0 {
		return nil, fmt.Errorf("namespace %s has search attributes of the wrong type: %s (remove them with `temporal operator search-attribute remove` and start again)", namespace, strings.Join(wrong, "; "))
	}
	return missing, nil
}
