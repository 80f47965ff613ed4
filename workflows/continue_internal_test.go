package workflows

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// fill sets every settable, serialised field reachable from v to a
// non-zero value: strings (and map keys) "s", numbers 7, slices and maps
// of one element, pointers to filled values. Fields tagged json:"-" are
// left alone; with unexported set, so are no unexported fields of v
// itself (the turn's), which it sets through unsafe.
func fill(t *testing.T, v reflect.Value, unexported bool) {
	t.Helper()
	switch v.Type() {
	case reflect.TypeOf(json.RawMessage(nil)):
		v.SetBytes([]byte(`{"k":1}`))
		return
	case reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("s"))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), false)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), false)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(t, k, false)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(t, e, false)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f, sf := v.Field(i), v.Type().Field(i)
			if sf.Tag.Get("json") == "-" {
				continue
			}
			if !sf.IsExported() {
				if !unexported {
					continue
				}
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}
			fill(t, f, false)
		}
	case reflect.Chan, reflect.Func:
		// Not state.
	default:
		t.Fatalf("fill: no value for %s", v.Type())
	}
}

// roundTrip is what happens to a run's input at continue-as-new: it is
// serialised by the SDK and read by the next run.
func roundTrip(t *testing.T, in TurnInput) TurnInput {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out TurnInput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// carriedFields are turn's fields carried across continue-as-new;
// runLocalFields are those deliberately not carried, with why.
var (
	carriedFields  = []string{"Resume", "msgs", "state", "perm", "local", "pending", "answers", "inFlight"}
	runLocalFields = map[string]string{
		"in":           "the next run's input starts from it",
		"recheck":      "set and cleared within one wait",
		"done":         "a finished turn does not continue",
		"approvalsCh":  "the signal channels are drained before continuing",
		"externalsCh":  "the signal channels are drained before continuing",
		"byRef":        "decided by a version marker in each run",
		"index":        "the memo is written again by the next run",
		"indexDirty":   "the next run writes its index on its first wait",
		"roles":        "the registered Workflow's, in each run",
		"notes":        "futures of this run; those in flight are carried as Resume.Notifying",
		"settled":      "set once a run ends",
		"policyCh":     "the signal channels are drained before continuing",
		"wfid":         "the same workflow id in every run",
		"chats":        "futures of this run, waited for (notifyGrace) before it ends; a post in flight at continue-as-new is lost (no message), never duplicated",
		"chatNotes":    "answers of calls whose post is in flight, which continue-as-new loses with the post",
		"unremembered": "set and read within one Update handler",
		"routes":       "the next run computes an entry's roles again (one more side effect)",
		"stopRunning":  "cancels this run's running step; a step in flight is carried waiting, not running",
		"saState":      "the next run writes the session's state again when it starts",
	}
)

// TestCarriedStateFields fails when a field is added to turn without
// saying whether it is carried across continue-as-new.
func TestCarriedStateFields(t *testing.T) {
	typ := reflect.TypeOf(turn{})
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		if _, ok := runLocalFields[name]; ok {
			continue
		}
		found := false
		for _, c := range carriedFields {
			found = found || c == name
		}
		if !found {
			t.Errorf("turn.%s is neither carried across continue-as-new nor run-local: "+
				"put it in Resume (carried with no further code), or carry it in carry/restore and list it in carriedFields, "+
				"or list it in runLocalFields with the reason", name)
		}
	}
}

// TestCarriedStateInput round-trips a continued run's input with every
// field set through restore, carry and the wire: nothing may be lost.
func TestCarriedStateInput(t *testing.T) {
	var in TurnInput
	fill(t, reflect.ValueOf(&in).Elem(), false)
	out := roundTrip(t, restore(roundTrip(t, in)).carry())
	want := in
	want.Prompt = ""
	wb, _ := json.Marshal(want)
	ob, _ := json.Marshal(out)
	if string(wb) != string(ob) {
		t.Fatalf("continue-as-new lost state:\nwant %s\n got %s", wb, ob)
	}
}

// TestCarriedStateTurn fills every carried field of a running turn,
// continues it as new and compares the next run's state.
func TestCarriedStateTurn(t *testing.T) {
	var tu turn
	v := reflect.ValueOf(&tu).Elem()
	for _, name := range carriedFields {
		f := v.FieldByName(name)
		fill(t, reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true)
	}
	// Resume.Step is the wire form of pending, answers and inFlight: a
	// running turn keeps it nil.
	tu.Step = nil
	next := restore(roundTrip(t, tu.carry()))
	w := reflect.ValueOf(next).Elem()
	for _, name := range carriedFields {
		a := reflect.NewAt(v.FieldByName(name).Type(), unsafe.Pointer(v.FieldByName(name).UnsafeAddr())).Elem().Interface()
		b := reflect.NewAt(w.FieldByName(name).Type(), unsafe.Pointer(w.FieldByName(name).UnsafeAddr())).Elem().Interface()
		if !reflect.DeepEqual(a, b) {
			ab, _ := json.Marshal(a)
			bb, _ := json.Marshal(b)
			t.Errorf("turn.%s not carried across continue-as-new:\nwant %s\n got %s", name, ab, bb)
		}
	}
	if !strings.Contains(string(must(json.Marshal(tu.carry()))), `"resume"`) {
		t.Fatal("carry sets no resume")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
