/* modprefs annotation app: the participant pages' behaviour (no inline scripts: CSP script-src 'self').
 *
 * Trial page protocol (paper §3.2.2):
 *  - sliders (on the study's rating scale: min, max, step and end labels come with the page, the
 *    paper's 1..100 "Terrible".."Perfect" by default; values are read as numbers, never rounded here)
 *    show no number and no handle until deliberately set (no anchoring); an unset
 *    slider has no name, so it is not submitted and the server refuses the trial. A locked
 *    (disabled) slider ignores pointer, touch and keys: chromium still sends pointer events to
 *    disabled inputs, so every handler checks `disabled`. Any value can be set, the midpoint
 *    included: a click (or tap) that leaves the value where it was, or Enter/Space on the focused
 *    slider, sets it at that value. Every committed set is logged;
 *  - audio: Response B can be played only after Response A has been heard in full; a response's
 *    sliders unlock on its clip's first `ended` event; on the first listen seeking and playback-rate
 *    changes are refused (reverted and logged); after it, replay and seeking are free. The server
 *    checks each first listen (audio fetched, `ended` no earlier than the clip's duration after
 *    `play`, on its own clock) and answers which clips it accepts; a refused listen locks the
 *    response again;
 *  - text: Response B is shown after Response A has been read (a minimum reading time, then a
 *    "Show Response B" button or, in `auto` mode, by itself), logged as a `reveal` event;
 *  - every event gets a unique id (a random page id + a counter) and waits in localStorage until
 *    the server acknowledges it, so a reload, a closed tab or a dropped connection loses nothing:
 *    the next page re-sends what is unacknowledged (the server stores an id once). The trial's
 *    unsent state (slider values, the preference, the typed reason) comes back after a reload
 *    from the server's log plus the unacknowledged events and the stored draft.
 */
(function () {
  'use strict';
  var dataEl = document.getElementById('page-data');
  if (!dataEl) return;
  var D = JSON.parse(dataEl.textContent);

  if (D.page !== 'trial' && D.token) {
    // past the trials: forget the last trial's stored events and draft reason (shared computers)
    try { window.localStorage.removeItem('modprefs:' + D.token); } catch (e) { /* storage disabled */ }
  }
  if (D.leave_url && D.csrf) {
    // leaving the page (closing the tab, navigating away) while holding a slot: tell the server, which
    // releases the slot after a short grace unless this participant comes back (a reload, the next page).
    // Submitting one of the page's forms is not leaving.
    var leaving = true;
    window.addEventListener('submit', function (ev) { if (!ev.defaultPrevented) leaving = false; });
    window.addEventListener('pagehide', function () {
      if (!leaving || !navigator.sendBeacon) return;
      navigator.sendBeacon(D.leave_url, new Blob([JSON.stringify({ csrf: D.csrf })], { type: 'application/json' }));
    });
    window.addEventListener('pageshow', function () { leaving = true; });
  }
  if (D.page === 'done' && D.redirect_url) {
    // on to Prolific by itself after a few seconds (the link stays as a fallback); "Stay" stops it
    var note = document.getElementById('redirect-note');
    var go = setTimeout(function () { window.location.assign(D.redirect_url); }, 1000 * Number(D.redirect_s || 5));
    window.__modprefs = { redirecting: true };
    if (note) {
      note.hidden = false;
      document.getElementById('stay').addEventListener('click', function () {
        clearTimeout(go);
        window.__modprefs.redirecting = false;
        note.textContent = 'You stayed on this page. Use the link below to return to Prolific.';
      });
    }
    return;
  }
  if (D.page === 'demographics') { demographics(); return; }
  if (D.page === 'headphones') { headphoneCheck(); return; }
  if (D.page === 'calibration') { calibration(); return; }
  if (D.page !== 'trial') return;

  // ---- storage of unacknowledged events and the draft reason ----------------------------------------
  var KEY = 'modprefs:' + D.token;
  function readStore() {
    try {
      var s = JSON.parse(window.localStorage.getItem(KEY) || 'null');
      if (s && s.trial === D.trial && Array.isArray(s.pending)) return s;
    } catch (e) { /* storage disabled or corrupt: start afresh */ }
    return { trial: D.trial, pending: [], draft: '' };
  }
  var store = readStore();
  function save() {
    try { window.localStorage.setItem(KEY, JSON.stringify(store)); } catch (e) { /* storage full or disabled */ }
  }

  // ---- event log ---------------------------------------------------------------------------------
  function randomId() {
    var a = new Uint8Array(8);
    window.crypto.getRandomValues(a);
    return Array.prototype.map.call(a, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }
  var pageId = randomId();
  var counter = 0;
  var URGENT = { onset: 1, play: 1, ended: 1, reveal: 1, submit: 1 };
  var submitted = false;
  var inflight = false;
  var timer = null;
  var failures = 0;
  var notice = document.getElementById('server-notice');
  window.__modprefs = {
    page: pageId, events: [], heard: {}, revealed: false, responses: [], conflicts: [], refused: [],
    pending: function () { return store.pending.length + (inflight ? 1 : 0); }
  };

  function log(kind, pos, x, field) {
    var e = { id: pageId + '-' + (counter++), kind: kind, pos: pos || null, t: Date.now(),
              x: (x === undefined || x === null || !isFinite(x)) ? null : Number(x), field: field || null };
    store.pending.push(e);
    save();
    window.__modprefs.events.push(e);
    if (URGENT[kind]) { clearTimeout(timer); timer = null; schedule(0); } else { schedule(250); }
    return e;
  }
  function schedule(ms) { if (!timer) timer = setTimeout(flush, ms); }
  function acknowledge(ids) {
    var done = {};
    ids.forEach(function (id) { done[id] = true; });
    store.pending = store.pending.filter(function (e) { return !done[e.id]; });
    save();
  }
  function flush() {
    timer = null;
    if (inflight || store.pending.length === 0) return;
    inflight = true;
    var batch = store.pending.slice(0, 100);
    var wait = null;
    fetch(D.events_url, {
      method: 'POST', credentials: 'same-origin', keepalive: true,
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': D.csrf, 'Accept': 'application/json' },
      body: JSON.stringify({ trial: D.trial, events: batch })
    }).then(function (r) {
      if (r.status === 429) wait = 1000 * Number(r.headers.get('Retry-After') || 1);
      if (!r.ok) { failures++; return null; }
      return r.json();
    }).then(function (res) {
      if (!res) return;
      failures = 0;
      window.__modprefs.responses.push(res);
      acknowledge(batch.map(function (e) { return e.id; }));  // stored, duplicate, conflict or refused: final
      applyServer(res);
    }).catch(function () { failures++; }).then(function () {
      inflight = false;
      if (!store.pending.length) return;
      var urgent = store.pending.some(function (e) { return URGENT[e.kind]; });
      schedule(wait !== null ? wait : failures ? Math.min(10000, 250 * Math.pow(2, failures)) : (urgent ? 0 : 250));
    });
  }
  function say(text) {
    if (!notice) return;
    notice.textContent = text;
    notice.hidden = !text;
  }
  function applyServer(res) {
    (res.conflicts || []).forEach(function (id) { window.__modprefs.conflicts.push(id); });
    if (res.conflicts && res.conflicts.length && window.console) console.warn('modprefs: events in conflict', res.conflicts);
    (res.refused || []).forEach(function (r) {
      window.__modprefs.refused.push(r);
      if (r.kind === 'ended' && players[r.pos] && (res.heard || []).indexOf(r.pos) < 0) relock(r.pos, r.message);
      if (r.kind === 'reveal' && !res.revealed) unreveal(r.message);
    });
    (res.heard || []).forEach(function (pos) { if (players[pos] && !players[pos].heard) markHeard(pos); });
    if (res.revealed && !revealed) doReveal(false);
  }

  // leaving or reloading the page: send what is unacknowledged (the CSRF token travels in the body);
  // it also stays in storage, and the next page sends it again (stored once by id)
  window.addEventListener('pagehide', function () {
    sliders.forEach(settle);
    if (!store.pending.length || submitted || !navigator.sendBeacon) return;
    var body = JSON.stringify({ trial: D.trial, csrf: D.csrf, events: store.pending.slice(0, 100) });
    navigator.sendBeacon(D.events_url, new Blob([body], { type: 'application/json' }));
  });

  // ---- sliders --------------------------------------------------------------------------------------
  // Changes are counted as the participant makes them: a pointer gesture (pointerdown .. release) is one
  // change (the browser's `change` at the release); a keyboard burst (arrow, Page, Home/End keys with less
  // than KEY_SETTLE_MS between them) is one change, committed when the keys settle, on Enter/Space, when
  // the slider loses focus, or at submission. An unset slider reads "not rated" to assistive technology.
  // By keyboard an unset slider starts from no value, not from its hidden middle: the first key puts it at the
  // end it enters from (Right, Up, Page Up, Home: the scale's minimum; Left, Down, Page Down, End: its maximum),
  // and the burst goes on from there, so the first value logged is the participant's own.
  var KEY_SETTLE_MS = 700;
  var NAV_KEYS = { ArrowLeft: 1, ArrowRight: 1, ArrowUp: 1, ArrowDown: 1, PageUp: 1, PageDown: 1, Home: 1, End: 1 };
  var FROM_MIN = { ArrowRight: 1, ArrowUp: 1, PageUp: 1, Home: 1 };
  var sliders = Array.prototype.slice.call(document.querySelectorAll('input.slider'));
  function endLabel(s, which) {
    var el = document.getElementById('end-' + which + '-' + s.dataset.field + '-' + s.dataset.pos);
    return el ? el.textContent.trim() : '';
  }
  function describe(s) {
    if (s.classList.contains('unset')) { s.setAttribute('aria-valuetext', 'not rated'); return; }
    var v = s.value;
    var text = v + ' (from ' + s.min + ', ' + endLabel(s, 'min') + ', to ' + s.max + ', ' + endLabel(s, 'max') + ')';
    if (v === s.min) text = v + ', ' + endLabel(s, 'min');
    if (v === s.max) text = v + ', ' + endLabel(s, 'max');
    s.setAttribute('aria-valuetext', text);
  }
  function markSet(s) {
    if (s.classList.contains('unset')) {
      s.classList.remove('unset');
      s.name = s.dataset.field + '_' + s.dataset.pos;
    }
    describe(s);
  }
  function settle(s) {  // the keyboard burst in progress (if any) is over: commit it
    if (!s._keyTimer) return;
    clearTimeout(s._keyTimer);
    s._keyTimer = null;
    commit(s);
  }
  function commit(s) {
    if (s.disabled) return;
    if (s._keyTimer) { clearTimeout(s._keyTimer); s._keyTimer = null; }
    markSet(s);
    var v = Number(s.value);
    if (s._last !== v) {
      s._last = v;
      log('slider', s.dataset.pos, v, s.dataset.field);
    }
    update();
  }
  sliders.forEach(function (s) {
    s._last = null;
    s._keyTimer = null;
    describe(s);
    s._armed = false;
    s.addEventListener('pointerdown', function (ev) {
      if (s.disabled) { ev.preventDefault(); s._armed = false; return; }
      s._armed = true;
    });
    s.addEventListener('pointercancel', function () { s._armed = false; });
    s.addEventListener('input', function () { if (s.disabled) return; markSet(s); update(); });
    s.addEventListener('change', function () {
      if (s.disabled) return;
      s._armed = false;
      if (s._keyTimer) { markSet(s); update(); return; }  // within a keyboard burst: committed when it settles
      commit(s);
    });
    s.addEventListener('keydown', function (ev) {
      if (s.disabled) return;
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); commit(s); return; }
      if (NAV_KEYS[ev.key] && !ev.altKey && !ev.ctrlKey && !ev.metaKey) {
        if (s.classList.contains('unset')) {  // from no value: the end the key enters from
          ev.preventDefault();
          s.value = FROM_MIN[ev.key] ? s.min : s.max;
          markSet(s);
          update();
        }
        clearTimeout(s._keyTimer);
        s._keyTimer = setTimeout(function () { s._keyTimer = null; commit(s); }, KEY_SETTLE_MS);
      }
    });
    s.addEventListener('blur', function () { settle(s); });
  });
  // a click or tap that leaves the value where it was fires no input/change: set it at that value
  document.addEventListener('pointerup', function () {
    sliders.forEach(function (s) {
      if (!s._armed) return;
      s._armed = false;
      setTimeout(function () { if (!s.disabled && s._last === null) commit(s); }, 30);
    });
  }, true);
  function restoreSlider(name, v) {
    var s = document.getElementById(name);
    if (!s || v === null || v === undefined) return;
    s.value = String(v);
    markSet(s);
    s._last = Number(s.value);
  }

  var prefs = Array.prototype.slice.call(document.querySelectorAll('input[name="preference"]'));
  prefs.forEach(function (r) {
    r.addEventListener('change', function () { log('preference', r.value === 'tie' ? null : r.value); update(); });
  });
  var reason = document.getElementById('justification');
  reason.addEventListener('input', function () { store.draft = reason.value; save(); });

  // ---- audio players ----------------------------------------------------------------------------
  var audio = D.condition === 'audio';
  var players = {};
  if (audio) {
    Array.prototype.slice.call(document.querySelectorAll('.player')).forEach(setupPlayer);
  }
  function setupPlayer(el) {
    var pos = el.dataset.pos;
    var a = el.querySelector('audio');
    var btn = el.querySelector('button.play');
    var fill = el.querySelector('.progressbar .fill');
    var bar = el.querySelector('.progressbar');
    var status = el.querySelector('.status');
    var time = el.querySelector('.time');
    var p = { pos: pos, audio: a, button: btn, status: status, fill: fill, bar: bar, heard: el.dataset.heard === 'true', maxT: 0 };
    function showTime() {  // elapsed / total
      if (time) time.textContent = clock(a.currentTime || 0) + ' / ' + clock(isFinite(a.duration) ? a.duration : 0);
    }
    ['loadedmetadata', 'durationchange', 'timeupdate', 'seeked', 'ended'].forEach(function (k) { a.addEventListener(k, showTime); });
    players[pos] = p;
    window.__modprefs.heard[pos] = p.heard;
    a.controls = false;
    if (p.heard) { label(p, 'Replay'); bar.setAttribute('aria-disabled', 'false'); }
    a.addEventListener('contextmenu', function (ev) { ev.preventDefault(); });

    btn.addEventListener('click', function () {
      if (btn.disabled) return;
      if (a.paused) {
        Object.keys(players).forEach(function (k) { if (k !== pos && !players[k].audio.paused) players[k].audio.pause(); });
        if (a.ended || (p.heard && a.duration && a.currentTime >= a.duration - 0.05)) a.currentTime = 0;
        var pr = a.play();
        if (pr && pr.catch) pr.catch(function () { status.textContent = 'Playback was blocked by the browser. Press play again.'; });
      } else {
        a.pause();
      }
    });
    a.addEventListener('play', function () { log('play', pos, a.currentTime); label(p, 'Pause'); status.textContent = p.heard ? 'Replaying…' : 'Playing… listen to the whole response.'; });
    a.addEventListener('pause', function () {
      if (a.ended) return;
      log('pause', pos, a.currentTime); label(p, 'Resume');
      status.textContent = p.heard ? 'Paused.' : 'Paused. Press resume to continue listening.';
    });
    a.addEventListener('ended', function () {
      if (!p.heard && a.duration && p.maxT < a.duration - 0.6) {
        // a jump to the end on the first listen: refused
        log('ended_refused', pos, a.currentTime);
        a.currentTime = p.maxT;
        return;
      }
      log('ended', pos, a.currentTime);
      label(p, 'Replay');
      if (!p.heard) markHeard(pos);
      status.textContent = 'You can replay this response.';
      fill.style.width = '100%';
    });
    a.addEventListener('timeupdate', function () {
      if (!p.heard && !a.seeking && a.currentTime > p.maxT && a.currentTime - p.maxT < 1.5) p.maxT = a.currentTime;
      if (a.duration) {
        fill.style.width = (100 * a.currentTime / a.duration).toFixed(1) + '%';
        bar.setAttribute('aria-valuenow', String(Math.round(100 * a.currentTime / a.duration)));
        bar.setAttribute('aria-valuetext', clock(a.currentTime) + ' of ' + clock(a.duration));
      }
    });
    // keyboard seeking (after the first full listen, like the pointer): arrows 5 s, Home/End
    bar.addEventListener('keydown', function (ev) {
      if (!p.heard || !a.duration) return;
      var t = { ArrowRight: a.currentTime + 5, ArrowUp: a.currentTime + 5, ArrowLeft: a.currentTime - 5,
                ArrowDown: a.currentTime - 5, Home: 0, End: a.duration }[ev.key];
      if (t === undefined) return;
      ev.preventDefault();
      a.currentTime = Math.max(0, Math.min(a.duration, t));
    });
    a.addEventListener('seeking', function () {
      if (!p.heard) {
        if (Math.abs(a.currentTime - p.maxT) > 0.25) {
          log('seek_refused', pos, a.currentTime);
          a.currentTime = p.maxT;
        }
      } else {
        log('seek', pos, a.currentTime);
      }
    });
    a.addEventListener('ratechange', function () { if (!p.heard && a.playbackRate !== 1) a.playbackRate = 1; });
    bar.addEventListener('click', function (ev) {
      if (!p.heard || !a.duration) return; // no seeking before the first full listen
      var rect = bar.getBoundingClientRect();
      a.currentTime = Math.max(0, Math.min(1, (ev.clientX - rect.left) / rect.width)) * a.duration;
    });
  }
  function label(p, word) {  // the button's visible word, and a name that says which response it plays
    p.button.textContent = word;
    p.button.setAttribute('aria-label', word + ' response ' + p.pos);
  }
  function clock(t) {
    var n = Math.max(0, Math.round(t));
    return Math.floor(n / 60) + ':' + ('0' + (n % 60)).slice(-2);
  }
  function markHeard(pos) {
    var p = players[pos];
    p.heard = true;
    p.bar.setAttribute('aria-disabled', 'false');
    window.__modprefs.heard[pos] = true;
    if (p.audio.paused) {
      label(p, 'Replay');
      p.status.textContent = 'You can replay this response.';
    }
    sliders.forEach(function (s) { if (s.dataset.pos === pos) s.disabled = false; });
    if (pos === 'A' && players.B) {
      players.B.button.disabled = false;
      if (!players.B.heard) players.B.status.textContent = 'Press play and listen to the whole response.';
    }
    update();
  }
  function relock(pos, why) {
    var p = players[pos];
    p.heard = false;
    p.maxT = 0;
    window.__modprefs.heard[pos] = false;
    if (!p.audio.paused) p.audio.pause();
    p.audio.currentTime = 0;
    p.fill.style.width = '0%';
    label(p, 'Play');
    p.bar.setAttribute('aria-disabled', 'true');
    p.status.textContent = 'Please listen to this response again, in full.';
    sliders.forEach(function (s) { if (s.dataset.pos === pos) s.disabled = true; });
    say('The server could not confirm that Response ' + pos + ' was heard in full (' + why + '). Please listen to it again.');
    update();
  }

  // ---- text condition: Response B after Response A -------------------------------------------------
  var reveal = D.reveal || { mode: 'off', min_read_s: 0 };
  var revealed = audio || reveal.mode === 'off' || !!D.revealed;
  var revealBox = document.getElementById('reveal-box');
  var revealBtn = document.getElementById('reveal-B');
  var revealTimer = null;
  window.__modprefs.revealed = revealed;
  function doReveal(logIt) {
    if (revealed) return;
    revealed = true;
    window.__modprefs.revealed = true;
    clearTimeout(revealTimer);
    var b = document.getElementById('response-B');
    if (b) b.hidden = false;
    var focusB = !!revealBox && (revealBox.contains(document.activeElement) || document.activeElement === document.body);
    if (revealBox) revealBox.hidden = true;
    sliders.forEach(function (s) { if (s.dataset.pos === 'B') s.disabled = false; });
    var heading = document.getElementById('heading-B');
    if (heading && focusB) heading.focus();  // keyboard users: on to the response they just revealed
    if (logIt) log('reveal', 'B');
    update();
  }
  function startReading() {
    clearTimeout(revealTimer);
    revealTimer = setTimeout(function () {
      if (reveal.mode === 'auto') { doReveal(true); return; }
      if (revealBtn) revealBtn.disabled = false;
    }, 1000 * Number(reveal.min_read_s || 0));
  }
  function unreveal(why) {
    revealed = false;
    window.__modprefs.revealed = false;
    var b = document.getElementById('response-B');
    if (b) b.hidden = true;
    if (revealBox) revealBox.hidden = false;
    if (revealBtn) revealBtn.disabled = true;
    sliders.forEach(function (s) { if (s.dataset.pos === 'B') s.disabled = true; });
    say('Response B was shown too early (' + why + '). Please read Response A again.');
    startReading();
    update();
  }
  if (revealBtn) revealBtn.addEventListener('click', function () { if (!revealBtn.disabled) doReveal(true); });

  // ---- completeness and submission ----------------------------------------------------------------
  var form = document.getElementById('trial-form');
  var submit = document.getElementById('submit');
  var fields = document.getElementById('preference-fields');
  var hint = document.getElementById('submit-hint');
  function allHeard() { return !audio || Object.keys(players).every(function (k) { return players[k].heard; }); }
  function allRated() { return sliders.every(function (s) { return !s.classList.contains('unset') && !s.disabled; }); }
  function update() {
    var ready = allHeard() && revealed && allRated();
    fields.disabled = !ready;
    var chosen = prefs.some(function (r) { return r.checked; });
    submit.disabled = !(ready && chosen);
    hint.textContent = !allHeard() ? 'Listen to both responses in full to continue.'
      : !revealed ? 'Read Response A, then show Response B, to continue.'
      : !allRated() ? 'Move every slider to continue.'
      : !chosen ? 'Choose the response you prefer (or tie).' : '';
  }

  // ---- restore the trial's state (after a reload) ---------------------------------------------------
  var restore = D.restore || { sliders: {}, preference: null };
  Object.keys(restore.sliders || {}).forEach(function (name) { restoreSlider(name, restore.sliders[name]); });
  var choice = restore.preference;
  store.pending.forEach(function (e) {  // newer than the server's log: not acknowledged yet
    if (e.kind === 'slider') restoreSlider(e.field + '_' + e.pos, e.x);
    if (e.kind === 'preference') choice = e.pos || 'tie';
  });
  prefs.forEach(function (r) { r.checked = r.value === choice; });
  if (store.draft) reason.value = store.draft;
  if (!revealed) startReading();
  update();
  log('onset');

  form.addEventListener('submit', function (ev) {
    sliders.forEach(settle);
    if (submitted || submit.disabled) { ev.preventDefault(); return; }
    if (store.pending.length > 250) {  // too many for the form: send the backlog first, then submit
      ev.preventDefault();
      flush();
      setTimeout(function () { if (!submitted) submit.click(); }, 500);
      return;
    }
    submitted = true;
    var e = log('submit');
    clearTimeout(timer); timer = null;
    form.elements.submit_t.value = String(e.t);
    form.elements.events.value = JSON.stringify(store.pending.slice(-250));
    submit.disabled = true;
    submit.textContent = 'Saving…';
  });
  // a page restored from the back/forward cache must not resubmit a stale form
  window.addEventListener('pageshow', function (ev) { if (ev.persisted) window.location.reload(); });

  // ---- headphone check -------------------------------------------------------------------------------
  function headphoneCheck() {
    var cal = document.getElementById('hp-calibration');
    var calBtn = document.getElementById('hp-calibrate');
    var audios = [];
    calBtn.addEventListener('click', function () { audios.forEach(function (a) { a.pause(); }); cal.currentTime = 0; cal.play(); });
    var qs = Array.prototype.slice.call(document.querySelectorAll('.hp-question'));
    var submitBtn = document.getElementById('hp-submit');
    var hpHint = document.getElementById('hp-hint');
    window.__modprefs = { hpEnded: {} };
    function name(btn, word) {
      btn.textContent = word;
      btn.setAttribute('aria-label', word + ' sound ' + (Number(btn.id.split('-').pop()) + 1));
    }
    function answered() {
      return qs.every(function (q) { return !!q.querySelector('input[type=radio]:checked'); });
    }
    function refresh() {
      var ok = answered();
      submitBtn.disabled = !ok;
      hpHint.textContent = ok ? '' : 'Play every sound and answer every question to continue.';
    }
    qs.forEach(function (q) {
      var i = q.dataset.i;
      var a = q.querySelector('audio');
      var btn = q.querySelector('button.play');
      var radios = Array.prototype.slice.call(q.querySelectorAll('input[type=radio]'));
      audios.push(a);
      btn.addEventListener('click', function () {
        if (btn.disabled) return;
        audios.forEach(function (o) { if (o !== a) o.pause(); });
        cal.pause();
        btn.disabled = true;  // each sound plays once
        name(btn, 'Playing…');
        var pr = a.play();
        if (pr && pr.catch) pr.catch(function () { btn.disabled = false; name(btn, 'Play'); });
      });
      a.addEventListener('ended', function () {
        name(btn, 'Played');
        radios.forEach(function (r) { r.disabled = false; });
        window.__modprefs.hpEnded[i] = true;
      });
      radios.forEach(function (r) { r.addEventListener('change', refresh); });
    });
    refresh();
  }

  // ---- calibration (audio condition: set a comfortable volume) ---------------------------------------
  function calibration() {
    var a = document.getElementById('cal-audio');
    var btn = document.getElementById('cal-play');
    var time = document.getElementById('cal-time');
    var status = document.getElementById('cal-status');
    var submitBtn = document.getElementById('cal-submit');
    function clockOf(t) {
      var n = Math.max(0, Math.round(t || 0));
      return Math.floor(n / 60) + ':' + ('0' + (n % 60)).slice(-2);
    }
    function showTime() { time.textContent = clockOf(a.currentTime) + ' / ' + clockOf(isFinite(a.duration) ? a.duration : 0); }
    ['loadedmetadata', 'durationchange', 'timeupdate', 'ended'].forEach(function (k) { a.addEventListener(k, showTime); });
    window.__modprefs = { calPlayed: false };
    btn.addEventListener('click', function () {
      if (!a.paused) { a.pause(); return; }
      if (a.ended) a.currentTime = 0;
      var pr = a.play();
      if (pr && pr.catch) pr.catch(function () { status.textContent = 'Playback was blocked by the browser. Press play again.'; });
    });
    a.addEventListener('play', function () {
      btn.textContent = 'Pause'; btn.setAttribute('aria-label', 'Pause the volume sample');
      status.textContent = 'Playing… set your volume now.';
    });
    a.addEventListener('pause', function () {
      btn.textContent = 'Play'; btn.setAttribute('aria-label', 'Play the volume sample');
    });
    a.addEventListener('ended', function () {
      window.__modprefs.calPlayed = true;
      submitBtn.disabled = false;
      status.textContent = 'Play it again if you changed the volume, then confirm.';
    });
  }

  // ---- demographics page --------------------------------------------------------------------------
  function demographics() {
    var tz = document.getElementById('timezone');
    try {
      if (tz && !tz.value) tz.value = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
    } catch (e) { /* no Intl */ }
    var block = document.getElementById('proficiency-block');
    var radios = document.querySelectorAll('input[name="native_english"]');
    function sync() {
      var no = document.querySelector('input[name="native_english"][value="no"]');
      block.hidden = !(no && no.checked);
      document.getElementById('english_proficiency').required = !block.hidden;
    }
    Array.prototype.forEach.call(radios, function (r) { r.addEventListener('change', sync); });
    sync();
  }
})();
