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
)

// SearchAttributes are the custom search attributes warden's workflow
// sets on a waiting turn, by name and type. A namespace that lacks them
// fails every workflow task of a turn that parks a call
// (BadSearchAttributes); EnsureSearchAttributes creates them.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return wardenclient.SearchAttributes()
}

// MissingSearchAttributesError is returned by EnsureSearchAttributes when
// the namespace lacks some of warden's search attributes and they could
// not be created with the client's credentials, or the server refuses
// the operator service (Temporal Cloud does: its search attributes are
// created with tcld or in the Cloud UI). Command gives the Temporal CLI
// command an administrator of the namespace runs, CloudCommand the tcld
// command for a Temporal Cloud namespace.
type MissingSearchAttributesError struct {
	// Namespace is the namespace that lacks them.
	Namespace string
	// Missing are the attributes to create, by name and type.
	Missing map[string]enumspb.IndexedValueType
	// Err is why the server refused to create them.
	Err error
}

// Error says what is missing, why it was not created and how to create
// it, on a self-run server and on Temporal Cloud.
func (e *MissingSearchAttributesError) Error() string {
	return fmt.Sprintf("namespace %s lacks warden's search attributes %s and they could not be created with these credentials: %v\n"+
		"create them as an administrator of the namespace (with the same --address and TLS or API-key flags as your other temporal commands):\n  %s\n"+
		"on Temporal Cloud, which refuses the operator service, with tcld (or in the Cloud UI, the namespace's search attributes):\n  %s",
		e.Namespace, strings.Join(slices.Sorted(maps.Keys(e.Missing)), ", "), e.Err, e.Command(""), e.CloudCommand())
}

// Unwrap returns the server's refusal.
func (e *MissingSearchAttributesError) Unwrap() error { return e.Err }

// Command is the Temporal CLI command that creates the missing
// attributes; address, when not empty, is passed as --address.
func (e *MissingSearchAttributesError) Command(address string) string {
	return wardenclient.CreateSearchAttributesCommand(address, e.Namespace, e.Missing)
}

// CloudCommand is the tcld command that creates the missing attributes
// in a Temporal Cloud namespace (Namespace is then NAME.ACCOUNT).
func (e *MissingSearchAttributesError) CloudCommand() string {
	return wardenclient.CloudSearchAttributesCommand(e.Namespace, e.Missing)
}

// refused reports whether err is the server refusing a call outright
// (no permission, or no such service: Temporal Cloud's answer to the
// operator service's search-attribute calls).
func refused(err error) bool {
	return errors.As(err, new(*serviceerror.PermissionDenied)) || errors.As(err, new(*serviceerror.Unimplemented))
}

// EnsureSearchAttributes checks that namespace has warden's search
// attributes (SearchAttributes) and creates the missing ones through the
// operator service, which needs an administrator's credentials on a
// server with an authorizer. It returns the names it created (none when
// all were there). When they cannot be created it returns a
// *MissingSearchAttributesError whose message carries the `temporal
// operator search-attribute create` command to run and, for Temporal
// Cloud (which refuses the operator service and is set up with tcld or
// its UI), the `tcld namespace search-attributes add` command. An
// attribute that exists with another type is an error too (a type cannot
// be changed). Where the operator service refuses even to list them, it
// checks each with a visibility query instead.
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
	if err != nil && refused(err) {
		// A server that refuses the operator service to these
		// credentials (Temporal Cloud to a namespace's API key) still
		// answers visibility queries, which name only known attributes.
		return probeSearchAttributes(ctx, c, namespace, want)
	}
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
			wrong = append(wrong, fmt.Sprintf("%s is %s, warden needs %s", name, wardenclient.SearchAttributeType(typ), wardenclient.SearchAttributeType(want[name])))
		}
	}
	if len(wrong) > 0 {
		return nil, fmt.Errorf("namespace %s has search attributes of the wrong type: %s (remove them with `temporal operator search-attribute remove` and start again)", namespace, strings.Join(wrong, "; "))
	}
	return missing, nil
}

// probeSearchAttributes finds which of want namespace lacks by counting
// workflows with a query on each: the server refuses a query that names
// an attribute it does not know (InvalidArgument). It cannot see an
// attribute's type; a wrong one shows when a turn sets it.
func probeSearchAttributes(ctx context.Context, c client.Client, namespace string, want map[string]enumspb.IndexedValueType) (map[string]enumspb.IndexedValueType, error) {
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: name + " IS NULL"})
		switch {
		case err == nil:
		case errors.As(err, new(*serviceerror.InvalidArgument)):
			missing[name] = want[name]
		default:
			return nil, fmt.Errorf("check search attribute %s of namespace %s: %w", name, namespace, wardenclient.Explain(err))
		}
	}
	return missing, nil
}
