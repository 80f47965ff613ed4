// warden inbox: the sessions list and a session's page. No build step.
// Everything the agent or a sender wrote is set as text, never as HTML.
(function () {
  "use strict";
  var every = parseInt(document.body.dataset.refresh, 10) || 2000;

  var say = window.wardenInbox.say, post = window.wardenInbox.post, getJSON = window.wardenInbox.getJSON;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function ago(iso) {
    var s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 60) { return Math.floor(s) + "s"; }
    if (s < 3600) { return Math.floor(s / 60) + "m"; }
    if (s < 48 * 3600) { return Math.floor(s / 3600) + "h" + ("0" + Math.floor(s % 3600 / 60)).slice(-2) + "m"; }
    return Math.floor(s / 86400) + "d";
  }

  // The sessions list: regrouped from GET /api/sessions.
  var groups = document.getElementById("sessions");
  if (groups) {
    var listSessions = function () {
      getJSON("api/sessions").then(function (j) {
        groups.querySelectorAll("section.group").forEach(function (sec) {
          var st = sec.dataset.state, ul = sec.querySelector("ul.sessions"), n = 0;
          ul.textContent = "";
          j.sessions.forEach(function (row) {
            if (row.state !== st) { return; }
            n++;
            var li = el("li", "session-row"), a = el("a", "", row.workflow_id);
            li.dataset.id = row.workflow_id;
            a.href = "session?id=" + encodeURIComponent(row.workflow_id);
            li.appendChild(a);
            li.appendChild(document.createTextNode(" "));
            li.appendChild(el("span", "badge state state-" + row.state, row.state));
            li.appendChild(document.createTextNode(" "));
            li.appendChild(el("span", "age", "run started " + ago(row.started) + " ago"));
            ul.appendChild(li);
          });
          if (!n) { ul.appendChild(el("li", "none", "none")); }
          sec.querySelector(".count").textContent = String(n);
        });
        document.body.dataset.updated = String(Date.now());
      }).catch(function (e) { say(e.message, true); });
    };
    setInterval(listSessions, every);
    return;
  }

  // A session's page.
  var id = document.body.dataset.session;
  var panel = document.getElementById("session");
  if (!id || !panel) { return; }
  var lastSeq = null, lastState = null;

  function show(v) {
    panel.dataset.state = v.state;
    var st = document.getElementById("state");
    st.textContent = v.state;
    st.className = "badge state state-" + v.state;
    document.getElementById("turns").textContent = String(v.turns);
    document.getElementById("calls").textContent = v.iterations + " model calls, " + v.tool_calls + " tool calls this turn";
    document.getElementById("usage").textContent = v.usage ? " · " + v.usage : "";
    var p = document.getElementById("paused");
    p.hidden = !v.paused;
    if (v.paused) {
      p.textContent = "";
      p.appendChild(document.createTextNode("paused by "));
      p.appendChild(el("b", "", v.paused.by));
      var rest = (v.paused.via && v.paused.via !== v.paused.by ? " (via " + v.paused.via + ")" : "") +
        " at " + new Date(v.paused.at).toISOString().replace(/\.\d+Z$/, "Z") + (v.paused.reason ? ": " + v.paused.reason : "");
      p.appendChild(document.createTextNode(rest));
    }
    document.getElementById("queued").hidden = !(v.queued || v.steers);
    document.getElementById("queued-n").textContent = String(v.queued);
    document.getElementById("steers-n").textContent = String(v.steers);
    var ended = v.state === "ended";
    document.getElementById("pause").disabled = !!v.paused || ended;
    document.getElementById("resume").disabled = !v.paused || ended;
    document.getElementById("cancel").disabled = ended;
    document.getElementById("send").disabled = ended;
    var hidden = document.getElementById("hidden");
    hidden.hidden = !v.hidden;
    hidden.textContent = v.hidden || "";
    var evs = document.getElementById("events");
    evs.textContent = "";
    v.events.forEach(function (e) {
      var li = el("li", "ev ev-" + e.type), t = el("time", "", new Date(e.time).toTimeString().slice(0, 8));
      li.dataset.seq = String(e.seq);
      t.title = e.time;
      li.appendChild(t);
      li.appendChild(document.createTextNode(" "));
      li.appendChild(el("span", "line", e.line));
      evs.appendChild(li);
    });
    var seq = v.events.length ? v.events[v.events.length - 1].seq : -1;
    if (!v.hidden && (seq !== lastSeq || v.state !== lastState)) { conversation(); }
    lastSeq = seq;
    lastState = v.state;
    document.body.dataset.updated = String(Date.now());
  }

  // The conversation is GET /conversation's plain text.
  function conversation() {
    var pre = document.getElementById("conversation");
    fetch("conversation?workflow=" + encodeURIComponent(id), { credentials: "same-origin" })
      .then(function (r) {
        return r.text().then(function (t) {
          if (!r.ok) {
            try { t = JSON.parse(t).error; } catch (e) { /* plain text */ }
            t = "(" + t + ")";
          }
          pre.textContent = t;
        });
      }).catch(function (e) { pre.textContent = "(" + e.message + ")"; });
  }

  function load() {
    return getJSON("api/session?id=" + encodeURIComponent(id)).then(show)
      .catch(function (e) { document.getElementById("state").textContent = e.message; });
  }

  document.getElementById("send-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var box = document.getElementById("message"), mode = document.getElementById("mode").value;
    if (!box.value.trim()) { say("type a message first", true); box.focus(); return; }
    post("api/session/message", { id: id, text: box.value, mode: mode }).then(function (ack) {
      box.value = "";
      say(ack.status + " (turn " + ack.turn + ")");
      load();
    }).catch(function (e) { say(e.message, true); });
  });

  document.getElementById("controls").addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-control]");
    if (!b) { return; }
    var body = { id: id, action: b.dataset.control };
    if (body.action === "cancel") {
      var why = document.getElementById("cancel-reason");
      if (!why.value.trim()) { say("say why you cancel it", true); why.focus(); return; }
      body.reason = why.value.trim();
    }
    b.disabled = true;
    post("api/session/control", body).then(function (ack) {
      say(ack.status);
      load();
    }).catch(function (e) { b.disabled = false; say(e.message, true); });
  });

  load();
  setInterval(load, every);
})();
