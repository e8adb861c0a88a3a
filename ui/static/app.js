// The live view: it signs in (a token typed in, or given as /ui#token=T,
// traded for a cookie by a same-origin POST), then follows the gateway's
// server-sent events, drawing each state it is sent. Everything shown
// comes from agents, so it is written as text (textContent), never as
// markup. <body data-state> says what the page is at ("signin", "live",
// "reconnecting") and data-renders how many states it drew, for whoever
// checks it.
"use strict";
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var renders = 0;
  var source = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function setState(s, message) {
    document.body.dataset.state = s;
    $("status").textContent = message;
  }

  function showLogin(message) {
    if (source) { source.close(); source = null; }
    $("view").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    setState("signin", "signed out");
  }

  function bar(b) {
    var td = el("td");
    var outer = el("div", "bar");
    outer.dataset.dim = b.dim;
    var fill = el("div", "fill " + (b.level || ""));
    var pct = b.limit > 0 ? Math.min(100, b.used * 100 / b.limit) : 0;
    fill.style.width = pct.toFixed(2) + "%";
    outer.dataset.percent = pct.toFixed(2);
    outer.appendChild(fill);
    if (b.limit > 0) {
      [["mark-warn", b.warn], ["mark-block", b.block]].forEach(function (m) {
        if (m[1] > 0 && m[1] <= 100) {
          var mark = el("div", "mark " + m[0]);
          mark.style.left = "calc(" + m[1] + "% - 1px)";
          outer.appendChild(mark);
        }
      });
    }
    outer.title = b.dim + ": " + b.text;
    td.appendChild(outer);
    td.appendChild(el("div", "bar-text", b.text));
    return td;
  }

  function time(t) {
    var d = new Date(t);
    return isNaN(d) ? String(t) : d.toLocaleTimeString();
  }

  function render(st) {
    var who = st.viewer.operator ? "operator: every agent" : "agent " + JSON.stringify(st.viewer.agent) + ": its sessions only";
    $("who").textContent = "Signed in as " + who + ".";
    $("live").textContent = "(changed in the last " + st.live + ")";
    var body = $("sessions").tBodies[0];
    var rows = document.createDocumentFragment();
    st.sessions.forEach(function (s) {
      var tr = el("tr");
      tr.dataset.agent = s.agent;
      tr.dataset.session = s.session;
      tr.appendChild(el("td", "id", s.agent));
      tr.appendChild(el("td", "id", s.session));
      tr.appendChild(el("td", "", s.role));
      tr.appendChild(el("td", "signal-" + s.signal, s.signal));
      s.bars.forEach(function (b) { tr.appendChild(bar(b)); });
      tr.appendChild(el("td", "muted", time(s.updated)));
      rows.appendChild(tr);
    });
    body.replaceChildren(rows);
    $("no-sessions").hidden = st.sessions.length > 0;
    var rbody = $("refusals").tBodies[0];
    var rrows = document.createDocumentFragment();
    st.refusals.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(el("td", "muted", time(r.at)));
      tr.appendChild(el("td", "id", r.agent));
      tr.appendChild(el("td", "id", r.session));
      tr.appendChild(el("td", "", r.role));
      tr.appendChild(el("td", "id", r.tool));
      var why = el("td", "", r.codes.join(", ") + (r.shadow ? " (shadow)" : ""));
      why.title = r.reason;
      tr.appendChild(why);
      rrows.appendChild(tr);
    });
    rbody.replaceChildren(rrows);
    $("no-refusals").hidden = st.refusals.length > 0;
    $("login").hidden = true;
    $("view").hidden = false;
    $("logout").hidden = !!st.viewer.anonymous;
    renders++;
    document.body.dataset.renders = String(renders);
    setState("live", "live, updated " + time(st.at));
  }

  function follow() {
    if (source) { source.close(); }
    source = new EventSource("/ui/api/events");
    source.addEventListener("state", function (e) { render(JSON.parse(e.data)); });
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED) {
        // Refused (signed out, or the login expired), or the gateway went.
        check();
      } else {
        setState("reconnecting", "reconnecting…");
      }
    };
  }

  // check asks who we are: signed in, follow; else the form.
  function check() {
    fetch("/ui/api/state", { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (r.status === 401) { showLogin(""); return; }
      if (!r.ok) { setState("error", "the gateway answered " + r.status); return; }
      return r.json().then(function (st) { render(st); follow(); });
    }, function () { setState("error", "the gateway does not answer"); });
  }

  function login(token) {
    return fetch("/ui/login", {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: token })
    }).then(function (r) {
      if (!r.ok) { showLogin("That is not a gateway token."); return; }
      check();
    }, function () { showLogin("The gateway does not answer."); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("login").addEventListener("submit", function (e) {
      e.preventDefault();
      var t = $("token");
      var token = t.value;
      t.value = "";
      login(token);
    });
    $("logout").addEventListener("click", function () {
      fetch("/ui/logout", { method: "POST", credentials: "same-origin" }).then(function () { showLogin(""); });
    });
    // A token in the fragment: taken, and cleared from the address bar and
    // history before anything else loads.
    var m = /^#token=(.+)$/.exec(location.hash);
    if (m) {
      history.replaceState(null, "", location.pathname);
      login(decodeURIComponent(m[1]));
    } else {
      check();
    }
  });
})();
