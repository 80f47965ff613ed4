package client

import "context"

// ListPendingLimit lists pending entries as ListPending does or, when
// limit is positive, only those of the first visibility page of at most
// limit turns (ListPendingPage), in the server's order.
func (cl *Client) ListPendingLimit(ctx context.Context, f Filter, limit int) ([]PendingEntry, error) {
	if limit <= 0 {
		return cl.ListPending(ctx, f)
	}
	page, err := cl.ListPendingPage(ctx, f, limit, nil)
	return page.Entries, err
}
