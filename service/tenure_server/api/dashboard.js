// The page's live updates, inlined by dashboard.py. EventSource sends what every request of the
// page sends: the browser's credentials for this origin (the Basic prompt's token), so no header
// has to be set. On an event the page fetches itself again and swaps <main> (one renderer, the
// server's); without a stream (an older replica, a 503) it refreshes every few seconds instead.
"use strict";
(() => {
  const STREAM = "/v1/events/stream";
  // Every streamed type, handed by dashboard.py from the service's one catalogue of event types
  // (domain/events.py): this script names none itself, so it cannot miss a new one.
  const CHANGES = JSON.parse(document.currentScript.dataset.events);
  const DEBOUNCE_MS = 200;
  // While live, ages on the page ("held for", "expires in") are still refreshed, slowly.
  const LIVE_REFRESH_SECONDS = 60;
  // After the stream was refused, try it again this much later.
  const STREAM_RETRY_MS = 30000;
  const fallbackSeconds = Number(document.documentElement.dataset.refresh) || 10;
  const indicator = document.getElementById("live");
  let source = null;
  let lastEventId = "";
  let pending = null;
  let poll = null;
  let fetches = 0; // only the latest fetch may swap the page: an older answer may come last
  const changed = new Set();

  function show(state, text) {
    indicator.dataset.state = state;
    indicator.textContent = text;
  }

  function every(seconds) {
    clearInterval(poll);
    poll = setInterval(refresh, seconds * 1000);
  }

  function mark() {
    for (const name of changed) {
      const quoted = CSS.escape(name);
      for (const row of document.querySelectorAll(
        `tr[data-lease="${quoted}"], tr[data-job="${quoted}"]`,
      )) {
        row.classList.add("changed");
      }
    }
    changed.clear();
  }

  async function refresh() {
    pending = null;
    const mine = ++fetches;
    let response;
    try {
      response = await fetch(location.pathname + location.search, {
        cache: "no-store",
        headers: { accept: "text/html" },
      });
    } catch {
      return; // the next event or poll tries again
    }
    if (!response.ok) return;
    const text = await response.text();
    if (mine !== fetches) return;
    const fresh = new DOMParser().parseFromString(text, "text/html");
    for (const selector of ["main", "header .clock"]) {
      const now = fresh.querySelector(selector);
      const before = document.querySelector(selector);
      if (now && before) before.replaceWith(now);
    }
    mark();
    document.documentElement.dataset.refreshed = String(Date.now());
  }

  function soon() {
    if (pending === null) pending = setTimeout(refresh, DEBOUNCE_MS);
  }

  function onChange(event) {
    lastEventId = event.lastEventId || lastEventId;
    try {
      const data = JSON.parse(event.data);
      const name = data.lease ?? data.job ?? data.subject;
      if (typeof name === "string") changed.add(name);
      if (typeof data.job === "string" && typeof data.lease === "string") changed.add(data.lease);
    } catch {
      // a malformed event still means something changed
    }
    soon();
  }

  function connect(resumeFrom) {
    const url = resumeFrom
      ? `${STREAM}?last_event_id=${encodeURIComponent(resumeFrom)}`
      : STREAM;
    source = new EventSource(url);
    source.onopen = () => {
      show("live", "live");
      every(LIVE_REFRESH_SECONDS);
      soon(); // what changed before this connection opened
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        // Refused (not 200, not text/event-stream): EventSource gives up; so does the page,
        // for a while, and refreshes as it did before the stream existed.
        show("off", `refreshes every ${fallbackSeconds} s`);
        every(fallbackSeconds);
        setTimeout(() => connect(lastEventId), STREAM_RETRY_MS);
      } else {
        show("reconnecting", "reconnecting…");
        every(fallbackSeconds);
      }
    };
    for (const type of CHANGES) source.addEventListener(type, onChange);
    source.addEventListener("stream.reset", soon);
    source.addEventListener("stream.dropped", (event) => {
      let resume = lastEventId;
      try {
        resume = JSON.parse(event.data).last_event_id || resume;
      } catch {
        // resume from the last event seen
      }
      source.close();
      show("reconnecting", "reconnecting…");
      connect(resume);
    });
  }

  every(fallbackSeconds);
  if (typeof EventSource === "function") {
    show("connecting", "connecting…");
    connect("");
  }
})();
