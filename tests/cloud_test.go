package tests

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/wardenhq/warden"
)

// rawCodec passes gRPC messages through as bytes, so the proxy forwards
// every call without knowing its types.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// refusingProxy is a real gRPC server in front of the tests' frontend
// that forwards every unary call except those refuse selects, which it
// answers PermissionDenied "Request unauthorized." — how Temporal Cloud
// answers the operator service's search-attribute calls made with a
// namespace's credentials (Cloud creates them with tcld or in its UI).
// It returns the proxy's address.
func refusingProxy(t *testing.T, refuse func(method string) bool) string {
	t.Helper()
	conn, err := grpc.NewClient(env.srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	forward := func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		if refuse(method) {
			return status.Error(codes.PermissionDenied, "Request unauthorized.")
		}
		var req []byte
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(ss.Context())
		ctx := metadata.NewOutgoingContext(ss.Context(), md)
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
		if err != nil {
			return err
		}
		if err := cs.SendMsg(&req); err != nil {
			return err
		}
		if err := cs.CloseSend(); err != nil {
			return err
		}
		for {
			var resp []byte
			if err := cs.RecvMsg(&resp); errors.Is(err, io.EOF) {
				ss.SetTrailer(cs.Trailer())
				return nil
			} else if err != nil {
				return err
			}
			if err := ss.SendMsg(&resp); err != nil {
				return err
			}
		}
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(forward))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// TestSearchAttributesRefusedLikeCloud: through a server that refuses
// the operator service's call that creates search attributes (as
// Temporal Cloud does), EnsureSearchAttributes fails naming the tcld
// command with warden's names and types, as well as the Temporal CLI's;
// through one that refuses the whole operator service, it finds the
// missing attributes with visibility queries instead and says the same.
// The control: once the attributes exist (created behind the proxy, as
// tcld would), both pass and create nothing.
func TestSearchAttributesRefusedLikeCloud(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	const operator = "/temporal.api.operatorservice.v1.OperatorService/"
	for _, c := range []struct {
		name   string
		refuse func(string) bool
	}{
		{"add refused", func(m string) bool { return m == operator+"AddSearchAttributes" }},
		{"operator service refused", func(m string) bool { return strings.HasPrefix(m, operator) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := freshNamespace(t, ctx, "cloud")
			pc, err := tclient.DialContext(ctx, tclient.Options{HostPort: refusingProxy(t, c.refuse), Namespace: ns, Logger: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			_, err = warden.EnsureSearchAttributes(ctx, pc, ns)
			var missing *warden.MissingSearchAttributesError
			if !errors.As(err, &missing) || len(missing.Missing) != len(warden.SearchAttributes()) || !errors.As(err, new(*serviceerror.PermissionDenied)) {
				t.Fatalf("EnsureSearchAttributes through the proxy: %v, want all missing and permission denied", err)
			}
			for _, want := range []string{
				"tcld namespace search-attributes add --namespace " + ns +
					` --search-attribute "WardenPendingCalls=KeywordList" --search-attribute "WardenPendingTools=KeywordList" --search-attribute "WardenSessionState=Keyword" --search-attribute "WardenWaitingSince=Datetime"`,
				"temporal operator search-attribute create --namespace " + ns + " --name WardenPendingCalls --type KeywordList",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if _, err := warden.EnsureSearchAttributes(ctx, env.c, ns); err != nil {
				t.Fatal(err)
			}
			if created, err := warden.EnsureSearchAttributes(ctx, pc, ns); err != nil || len(created) != 0 {
				t.Errorf("through the proxy once they exist: created %v, %v", created, err)
			}
		})
	}
}
