package parse

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/python"
)

// TestIPythonCell: OpenHands' execute_ipython_cell is a python_run,
// decoded strictly, with guidance that shows the corrected call.
func TestIPythonCell(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       python.Run
		reason     string // "" if the call is valid
		guidance   string
	}{
		{name: "execute_ipython_cell", args: `{"code": "import os\nos.getcwd()"}`, want: python.Run{Code: "import os\nos.getcwd()"}},
		{name: "functions.execute_ipython_cell", args: `"{\"code\": \"1+1\"}"`, want: python.Run{Code: "1+1"}},
		{name: "Execute_IPython_Cell", args: `{"code": ""}`, want: python.Run{}},
		{name: "execute_ipython_cell", args: `{}`, reason: `missing "code"`},
		{name: "execute_ipython_cell", args: `{"code": 1}`, reason: `"code" must be a string, not a number`},
		{name: "execute_ipython_cell", args: `{"Code": "1+1"}`, reason: `unknown field "Code" (did you mean "code"?)`},
		{name: "execute_ipython_cell", args: `{"code": "1+1", "timeout": 5}`, reason: `unknown field "timeout"`, guidance: `{"code": "1+1"}`},
		{name: "execute_ipython_cell", args: `{'code': '1+1'}`, reason: "arguments are a Python literal, not JSON", guidance: `{"code": "1+1"}`},
		{name: "execute_ipython_cell", args: `{"code": "a"} {"code": "b"}`, reason: "trailing data after the JSON arguments"},
	} {
		got := ToolCall(tc.name, []byte(tc.args))
		if tc.reason == "" {
			if got != tc.want {
				t.Errorf("%s(%s) = %#v, want %#v", tc.name, tc.args, got, tc.want)
			}
			continue
		}
		ia, ok := got.(event.InvalidAction)
		if !ok || !strings.Contains(ia.Reason, tc.reason) || !strings.Contains(ia.Guidance, tc.guidance) {
			t.Errorf("%s(%s) = %#v, want invalid %q with guidance holding %q", tc.name, tc.args, got, tc.reason, tc.guidance)
		}
	}
	if ia, ok := ToolCall("nope", nil).(event.InvalidAction); !ok || !strings.Contains(ia.Guidance, "execute_ipython_cell") {
		t.Errorf("unknown tool's guidance does not list execute_ipython_cell: %+v", ia)
	}
}
