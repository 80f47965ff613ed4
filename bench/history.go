package bench

import (
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/wardenhq/warden/workflows"
)

// ModelStep is one model call found in a turn's history.
type ModelStep struct {
	// Time is when the call was scheduled (a regular activity) or
	// completed on the workflow's clock (a local one).
	Time time.Time
	// Bytes is the recorded input of a regular activity, or the recorded
	// result of a local one (a local activity's input is not in history).
	Bytes int
	Local bool
}

// ModelStepOf recognises a model call in a history event: the scheduling
// of a ModelStep activity, or the marker of a local one (scripted model
// steps run as local activities).
func ModelStepOf(ev *historypb.HistoryEvent) (ModelStep, bool) {
	if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
		if a.GetActivityType().GetName() != workflows.ActivityModelStep {
			return ModelStep{}, false
		}
		return ModelStep{Time: ev.GetEventTime().AsTime(), Bytes: payloadBytes(a.GetInput().GetPayloads())}, true
	}
	m := ev.GetMarkerRecordedEventAttributes()
	if m == nil || m.GetMarkerName() != "LocalActivity" {
		return ModelStep{}, false
	}
	var data struct {
		ActivityType string
		ReplayTime   time.Time
	}
	if converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &data) != nil ||
		data.ActivityType != workflows.ActivityModelStep {
		return ModelStep{}, false
	}
	return ModelStep{Time: data.ReplayTime, Bytes: payloadBytes(m.GetDetails()["result"].GetPayloads()), Local: true}, true
}

func payloadBytes[P interface{ GetData() []byte }](ps []P) int {
	n := 0
	for _, p := range ps {
		n += len(p.GetData())
	}
	return n
}
