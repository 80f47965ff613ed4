// warden inbox: live refresh and JSON actions. No build step.
(function () {
  "use strict";
  var list = document.getElementById("entries");
  var statusEl = document.getElementById("status");
  var every = parseInt(document.body.dataset.refresh, 10) || 2000;
  // A session's page (data-workflow) lists that turn's entries only: the
  // listing's workflow filter is a prefix, so the page keeps exact ids.
  var only = document.body.dataset.workflow || "";
  var listQuery = only ? "?workflow=" + encodeURIComponent(only) : window.location.search;

  var say = window.wardenInbox.say, post = window.wardenInbox.post;

  function ref(li) {
    return { workflow_id: li.dataset.wf, call_id: li.dataset.call, hash: li.dataset.hash };
  }

  function done(li, what) {
    li.classList.add("answered");
    li.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    say(what + " " + li.dataset.tool + " " + li.dataset.call);
    refresh();
  }

  function act(li, kind) {
    var r = ref(li), p, why = li.querySelector(".answer-reason");
    if (why && why.value.trim() && kind !== "deny" && kind !== "budget-deny") { r.reason = why.value.trim(); }
    if (kind === "allow") {
      r.decision = "allow";
      p = post("api/approve", r).then(function () { done(li, "allowed"); });
    } else if (kind === "always") {
      var scope = li.querySelector(".scope-pick").value, ttl = li.querySelector(".scope-ttl").value.trim();
      // The input scope remembers the exact input: it takes no rule.
      var rule = scope === "input" ? "this exact input" :
        li.querySelector(".rule-text").value.trim() || li.querySelector(".rule-pick").value;
      if (!rule) { say("choose or type a rule", true); return; }
      r.decision = "always_allow";
      if (scope !== "input") { r.rules = [rule]; }
      if (scope) {
        r.scope = scope;
        if (ttl) { r.ttl = ttl; }
        r.single_use = li.querySelector(".scope-once").checked;
      }
      p = post("api/approve", r).then(function () { done(li, "always allowed (" + rule + ")"); });
    } else if (kind === "deny") {
      r.reason = li.querySelector(".deny-reason").value || (why ? why.value : "");
      p = post("api/deny", r).then(function () { done(li, "denied"); });
    } else if (kind === "raise") {
      // The amounts typed, as a raise is written: cost=+2,Bash=+50.
      var parts = [];
      li.querySelectorAll("input.raise-amount").forEach(function (i) {
        var v = i.value.trim();
        if (!v) { return; }
        if (i.dataset.bound === "per_tool") {
          v.split(",").forEach(function (item) {
            var kv = item.split("=");
            if (kv.length === 2 && kv[0].trim() && kv[1].trim()) { parts.push(kv[0].trim() + "=+" + kv[1].trim().replace(/^\+/, "")); }
            else if (item.trim()) { parts.push(item.trim()); }
          });
        } else {
          parts.push(i.dataset.bound + "=+" + v.replace(/^\+/, ""));
        }
      });
      if (!parts.length) { say("type an amount to raise the budget by", true); return; }
      r.decision = "allow";
      r.raise = parts.join(",");
      p = post("api/budget", r).then(function () { done(li, "raised (" + r.raise + ")"); });
    } else if (kind === "budget-deny") {
      r.decision = "deny";
      r.reason = li.querySelector(".deny-reason").value;
      p = post("api/budget", r).then(function () { done(li, "denied"); });
    } else if (kind === "edit") {
      var text = li.querySelector(".edit-input").value, input;
      try { input = JSON.parse(text); } catch (e) { say("input is not valid JSON: " + e.message, true); return; }
      r.decision = "allow";
      r.input = input;
      p = post("api/approve", r).then(function () { done(li, "allowed edited"); });
    } else if (kind === "answer") {
      var answers = [];
      li.querySelectorAll("fieldset.question").forEach(function (fs) {
        var sel = [];
        fs.querySelectorAll("input[type=radio]:checked, input[type=checkbox]:checked").forEach(function (i) { sel.push(i.value); });
        var a = { question: fs.dataset.question, selected: sel };
        var other = fs.querySelector("input.other").value.trim();
        if (other) { a.other = other; }
        answers.push(a);
      });
      p = post("api/answer", { workflow_id: r.workflow_id, call_id: r.call_id, hash: r.hash, answers: answers })
        .then(function () { done(li, "answered"); });
    } else if (kind === "claim" || kind === "take" || kind === "release") {
      p = post("api/claim", { workflow_id: r.workflow_id, call_id: r.call_id, action: kind })
        .then(function () { say((kind === "release" ? "released " : "claimed ") + r.call_id); refresh(); });
    } else if (kind === "snooze" || kind === "wake") {
      var body = { workflow_id: r.workflow_id, call_id: r.call_id };
      if (kind === "snooze") { body["for"] = li.querySelector(".snooze-for").value; }
      p = post("api/snooze", body)
        .then(function () { say((kind === "wake" ? "woke " : "snoozed ") + r.call_id); refresh(); });
    } else if (kind === "complete") {
      p = post("api/answer", { workflow_id: r.workflow_id, call_id: r.call_id, hash: r.hash,
        content: li.querySelector(".ext-content").value, is_error: li.querySelector(".ext-error").checked })
        .then(function () { done(li, "completed"); });
    }
    if (p) { p.catch(function (e) { say(e.message, true); }); }
  }

  list.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-act]");
    if (!b) { return; }
    act(b.closest("li.entry"), b.dataset.act);
  });
  list.addEventListener("change", function (ev) {
    if (ev.target.classList.contains("rule-pick")) {
      var li = ev.target.closest("li.entry");
      if (ev.target.value === "") { li.querySelector(".rule-text").focus(); }
    }
  });

  function picked() {
    return Array.prototype.slice.call(list.querySelectorAll("li.entry input.pick:checked"))
      .map(function (c) { return c.closest("li.entry"); });
  }
  function bulk(action) {
    var lis = picked();
    if (!lis.length) { say("select some approvals first", true); return; }
    post("api/bulk", { action: action, reason: document.getElementById("bulk-reason").value, items: lis.map(ref) })
      .then(function (j) {
        var bad = j.results.filter(function (x) { return !x.ok; });
        say(action + ": " + (j.results.length - bad.length) + " ok" + (bad.length ? ", " + bad.length + " failed: " + bad[0].error : ""), bad.length > 0);
        refresh();
      }).catch(function (e) { say(e.message, true); });
  }
  // A session's page lists its entries without the bulk bar.
  if (document.getElementById("bulk")) {
    document.getElementById("bulk-allow").addEventListener("click", function () { bulk("allow"); });
    document.getElementById("bulk-deny").addEventListener("click", function () { bulk("deny"); });
    document.getElementById("select-all").addEventListener("change", function (ev) {
      list.querySelectorAll("input.pick").forEach(function (c) { c.checked = ev.target.checked; });
    });
  }

  // Live updates: keep entries that are still pending untouched (so typed
  // reasons and edits survive), drop answered ones, insert new ones.
  function apply(j) {
    if (only) {
      j.items = j.items.filter(function (it) { return it.workflow_id === only; });
      j.count = j.items.length;
    }
    var keep = {};
    j.items.forEach(function (it) { keep[it.key] = it; });
    list.querySelectorAll("li.entry").forEach(function (li) {
      if (!keep[li.dataset.key]) { li.remove(); }
    });
    var prev = null;
    j.items.forEach(function (it) {
      var li = null;
      list.querySelectorAll("li.entry").forEach(function (x) { if (x.dataset.key === it.key) { li = x; } });
      if (!li) {
        var t = document.createElement("template");
        t.innerHTML = it.html.trim();
        li = t.content.firstElementChild;
      } else {
        var fresh = document.createElement("template");
        fresh.innerHTML = it.html.trim();
        var age = fresh.content.querySelector(".age");
        if (age) { li.querySelector(".age").replaceWith(age); }
        // Claims and snoozes change without the entry changing.
        [".claim", ".marks", ".you-allowed"].forEach(function (sel) {
          var n = fresh.content.querySelector(sel), o = li.querySelector(sel);
          if (n && o) { o.replaceWith(n); }
        });
      }
      if (prev ? prev.nextElementSibling !== li : list.firstElementChild !== li) {
        list.insertBefore(li, prev ? prev.nextElementSibling : list.firstElementChild);
      }
      prev = li;
    });
    statusEl.textContent = j.count + " waiting";
    document.getElementById("empty").hidden = j.count > 0;
    document.body.dataset.updated = String(Date.now());
  }
  function refresh() {
    return fetch("api/pending" + listQuery, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("refresh: " + r.status); } return r.json(); })
      .then(apply)
      .catch(function (e) { statusEl.textContent = e.message; });
  }
  // The server pushes the listing when it changes (server-sent events);
  // while that stream is down the page polls.
  var stream = null;
  if (window.EventSource) {
    stream = new EventSource("api/stream" + listQuery);
    stream.onmessage = function (ev) { document.body.dataset.live = "sse"; apply(JSON.parse(ev.data)); };
    stream.addEventListener("failure", function (ev) { statusEl.textContent = JSON.parse(ev.data).error; });
  }

  // A notification's link ends in #WORKFLOW/CALL: open that entry.
  function focusLinked() {
    var h = decodeURIComponent(window.location.hash.slice(1)), i = h.lastIndexOf("/");
    if (i <= 0) { return; }
    var wf = h.slice(0, i), call = h.slice(i + 1), found = null;
    list.querySelectorAll("li.entry").forEach(function (li) {
      li.classList.remove("focus");
      if (li.dataset.wf === wf && li.dataset.call === call) { found = li; }
    });
    if (!found) { say(call + " of " + wf + " is no longer waiting (answered, or the turn ended)", true); return; }
    found.classList.add("focus");
    found.scrollIntoView({ block: "center" });
    var first = found.querySelector("button, input, textarea, select");
    if (first) { first.focus({ preventScroll: true }); }
  }
  window.addEventListener("hashchange", focusLinked);
  focusLinked();
  setInterval(function () {
    if (!stream || stream.readyState !== 1) { document.body.dataset.live = "poll"; refresh(); }
  }, every);
})();
