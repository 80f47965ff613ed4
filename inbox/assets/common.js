// warden inbox: what every page's script uses (the toast, JSON requests).
// No build step. Pages load it before their own script.
(function () {
  "use strict";

  // fetched reads a response as JSON and fails with the server's error.
  function fetched(r) {
    return r.json().catch(function () { return {}; }).then(function (j) {
      if (!r.ok) { throw new Error(j.error || r.status + " " + r.statusText); }
      return j;
    });
  }

  window.wardenInbox = {
    // say shows msg in the toast for 5 s (bad: as an error).
    say: function say(msg, bad) {
      var toast = document.getElementById("toast");
      toast.textContent = msg;
      toast.className = bad ? "show bad" : "show";
      clearTimeout(say.t);
      say.t = setTimeout(function () { toast.className = ""; }, 5000);
    },
    // post sends body as JSON with the inbox's CSRF header.
    post: function (path, body) {
      return fetch(path, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Warden-Inbox": "1" },
        body: JSON.stringify(body)
      }).then(fetched);
    },
    // getJSON reads path as JSON.
    getJSON: function (path) {
      return fetch(path, { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(fetched);
    }
  };
})();
