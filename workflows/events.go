package workflows

import (
	"slices"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"
)

// Bounds of a turn's event stream (what it keeps in memory and shows;
// the change IDs and the bounds replay depends on are in versions.go).
const (
	maxEvents = 1000
	// eventTextBytes bounds an event's text and input.
	eventTextBytes = 2000
)

// emit appends an event to the bounded ring.
func (t *turn) emit(ctx workflow.Context, e Event) {
	t.Seq++
	e.Seq, e.Time = t.Seq, workflow.Now(ctx)
	e.Text, e.Input = clip(e.Text), clip(e.Input)
	t.Events = append(t.Events, e)
	if len(t.Events) > maxEvents {
		t.Events = slices.Delete(t.Events, 0, len(t.Events)-maxEvents)
	}
}

// clip bounds an event's text.
func clip(s string) string {
	if len(s) <= eventTextBytes {
		return s
	}
	cut := eventTextBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// eventsPage is the QueryEvents answer: the events kept from cursor on,
// and the cursor of the next page.
func (t *turn) eventsPage(cursor int) EventsPage {
	page := EventsPage{Next: cursor, Done: t.done}
	for _, e := range t.Events {
		if e.Seq >= cursor {
			page.Events = append(page.Events, e)
			page.Next = e.Seq + 1
		}
	}
	return page
}
