/* modprefs annotation app: the participant pages' behaviour (no inline scripts: CSP script-src 'self').
 *
 * One live tab per session (docs/app.md, "One tab at a time"):
 *  - every browser tab has an id (sessionStorage, so a reload keeps it; a duplicated tab, whose sessionStorage is a
 *    copy, notices the original over a BroadcastChannel and takes a new one);
 *  - a page that loads claims the session for its tab (POST ping, claim): the last page opened wins, because it
 *    is the one in front of the participant (a reload claims it back). A tab that loses it is told at once (the
 *    BroadcastChannel; from another browser or device: at its next request) and shows a dialog with "Continue in
 *    this tab"; its events and submissions are refused by the server (a refused submission is an incident);
 *  - an open page sends a heartbeat every heartbeat_s seconds, visible or hidden, so it never expires; when the
 *    live tab leaves, the others send one at once (the slot is kept while a page of the session is open).
 *
 * Trial page protocol (paper §3.2.2):
 *  - ratings on the study's scale: a slider (the paper's 1..100 "Terrible".."Perfect" by default) or, on a short
 *    scale (<= 11 points), labelled, numbered category points (radio buttons; P.808's ACR labels on 1..5). A
 *    slider shows no number and no handle until deliberately set (no anchoring); an unset rating has no value,
 *    so it is not submitted and the server refuses the trial. A locked (disabled) rating ignores pointer, touch
 *    and keys: chromium still sends pointer events to disabled inputs, so every handler checks `disabled`. Any
 *    slider value can be set, the midpoint included: a click (or tap) that leaves the value where it was, or
 *    Enter/Space on the focused slider, sets it at that value. Every committed set is logged;
 *  - audio: each clip is preloaded with a visible state; one that fails to load is retried (1, 2, 4 s), and after
 *    the last failure the page reports it (an incident) and goes to the problem page (the lab's error code).
 *    Response B can be played only after Response A has been heard in full; a response's ratings unlock on its
 *    clip's first `ended` event; on the first listen seeking and playback-rate changes are refused (reverted and
 *    logged); after it, replay and seeking are free. The server checks each first listen (audio fetched, `ended`
 *    no earlier than the clip's duration after `play`, on its own clock) and answers which clips it accepts; a
 *    refused listen locks the response again;
 *  - text: Response B is shown after Response A has been read (a minimum reading time, then a
 *    "Show Response B" button or, in `auto` mode, by itself), logged as a `reveal` event;
 *  - the page's attention: the tab hidden / shown again (`hidden`, `visible`) and the window's focus lost /
 *    regained (`blur`, `focus`) are logged;
 *  - every event gets a unique id (a random page id + a counter) and waits in localStorage (one store per tab)
 *    until the server acknowledges it, so a reload, a closed tab or a dropped connection loses nothing: the next
 *    page of the tab re-sends what is unacknowledged (the server stores an id once). The trial as this tab left
 *    it (clips heard, Response B shown, the values set, the typed reason) comes back after a reload from the
 *    server's log of this tab's events, plus the unacknowledged events and the stored draft.
 */
(function () {
  'use strict';

  function randomId() {
    var a = new Uint8Array(8);
    window.crypto.getRandomValues(a);
    return Array.prototype.map.call(a, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }

  // ---- the browser tab's id ------------------------------------------------------------------------------
  var TAB_KEY = 'modprefs:tab';
  var bc = 'BroadcastChannel' in window ? new BroadcastChannel('modprefs') : null;
  var TAB = null;
  var tabWaiting = [];
  function whenTab(fn) { if (TAB) fn(TAB); else tabWaiting.push(fn); }
  (function () {
    var stored = null;
    try { stored = window.sessionStorage.getItem(TAB_KEY); } catch (e) { /* storage disabled */ }
    function settle(id) {
      TAB = id;
      try { window.sessionStorage.setItem(TAB_KEY, id); } catch (e) { /* storage disabled */ }
      tabWaiting.splice(0).forEach(function (fn) { fn(id); });
    }
    if (!stored || !bc) { settle(stored || randomId()); return; }
    // a duplicated tab has a copy of the original's sessionStorage: ask whether a live page has this id
    var taken = false;
    function probe(ev) { if (ev.data && ev.data.type === 'tab-mine' && ev.data.tab === stored) taken = true; }
    bc.addEventListener('message', probe);
    bc.postMessage({ type: 'tab-who', tab: stored });
    setTimeout(function () { bc.removeEventListener('message', probe); settle(taken ? randomId() : stored); }, 150);
  })();
  if (bc) {
    bc.addEventListener('message', function (ev) {
      var m = ev.data || {};
      if (m.type === 'tab-who' && TAB && m.tab === TAB) bc.postMessage({ type: 'tab-mine', tab: TAB });
    });
  }

  var dataEl = document.getElementById('page-data');
  if (!dataEl) return;
  var D = JSON.parse(dataEl.textContent);
  window.__modprefs = { live: false, claimed: false, superseded: false };

  if (D.page !== 'trial' && D.token) {
    // past the trials: forget the trials' stored events and draft reasons (shared computers)
    try {
      Object.keys(window.localStorage).forEach(function (k) {
        if (k.indexOf('modprefs:' + D.token) === 0) window.localStorage.removeItem(k);
      });
    } catch (e) { /* storage disabled */ }
  }

  // ---- one live tab, the heartbeat --------------------------------------------------------------------------
  var session = { claimed: false, live: false, waiting: [] };
  function onClaim(fn) { if (session.claimed) fn(session.claim); else session.waiting.push(fn); }
  function superseded() {
    if (window.__modprefs.superseded) return;
    session.live = false;
    window.__modprefs.live = false;
    window.__modprefs.superseded = true;
    var dlg = document.getElementById('tab-dialog');
    if (dlg && !dlg.open && dlg.showModal) dlg.showModal();
  }
  function ping(claim) {
    return fetch(D.ping_url, {
      method: 'POST', credentials: 'same-origin', keepalive: true,
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': D.csrf, 'Accept': 'application/json' },
      body: JSON.stringify({ tab: TAB, claim: !!claim })
    }).then(function (r) { return r.ok ? r.json() : null; });
  }
  // a form of this page is being sent: the next page is on its way (a reload now would abort it)
  window.addEventListener('submit', function (ev) { if (!ev.defaultPrevented) window.__modprefs.submitting = true; });
  function behind(res) {  // the session moved on (another page of it, an end): this page is out of date
    if (window.__modprefs.submitting) return false;
    return res.page !== D.page || (D.page === 'trial' && res.trial !== D.trial);
  }
  var beatTimer = null;
  function heartbeat() {
    clearTimeout(beatTimer);
    beatTimer = setTimeout(function () {
      ping(false).then(function (res) {
        if (res) {
          if (!res.live) superseded();
          else if (behind(res)) window.location.reload();
        }
      }).catch(function () { /* offline: the next beat tries again */ }).then(heartbeat);
    }, 1000 * Number(D.heartbeat_s || 30));
  }
  function claim(attempt) {
    ping(true).then(function (res) {
      if (!res) throw new Error('claim refused');
      if (behind(res)) { window.location.reload(); return; }
      session.claimed = session.live = true;
      session.claim = res;
      window.__modprefs.claimed = window.__modprefs.live = true;
      window.__modprefs.tab = TAB;
      if (bc) bc.postMessage({ type: 'claimed', token: D.token, tab: TAB });
      session.waiting.splice(0).forEach(function (fn) { fn(res); });
      heartbeat();
    }).catch(function () {
      var notice = document.getElementById('server-notice');
      if (notice && attempt >= 2) { notice.textContent = 'Connecting to the server…'; notice.hidden = false; }
      setTimeout(function () { claim(attempt + 1); }, Math.min(10000, 1000 * Math.pow(2, attempt)));
    });
  }
  if (D.ping_url && D.csrf) {
    whenTab(function () { claim(0); });
    if (bc) {
      bc.addEventListener('message', function (ev) {
        var m = ev.data || {};
        if (m.token !== D.token || m.tab === TAB) return;
        if (m.type === 'claimed') superseded();  // another tab of this session took it over
        if (m.type === 'left') ping(false).catch(function () { /* offline */ });  // the live tab left: still here
      });
    }
    var again = document.getElementById('tab-continue');
    if (again) again.addEventListener('click', function () { window.location.reload(); });  // a reload claims
  }
  if (D.leave_url && D.csrf) {
    // leaving the page (closing the tab, navigating away) while holding a slot: tell the server, which
    // releases the slot after a short grace unless this participant comes back (a reload, the next page, or
    // another open tab of the session). Submitting one of the page's forms is not leaving.
    var leaving = true;
    window.addEventListener('submit', function (ev) { if (!ev.defaultPrevented) leaving = false; });
    window.addEventListener('pagehide', function () {
      if (!leaving || (D.ping_url && !session.live)) return;  // a tab that does not hold the session: not it
      if (bc) bc.postMessage({ type: 'left', token: D.token, tab: TAB });
      if (!navigator.sendBeacon) return;
      navigator.sendBeacon(D.leave_url, new Blob([JSON.stringify({ csrf: D.csrf, tab: TAB })], { type: 'application/json' }));
    });
    window.addEventListener('pageshow', function () { leaving = true; });
  }
  if (D.page === 'demographics') { demographics(); return; }
  if (D.page === 'headphones') { headphoneCheck(); return; }
  if (D.page === 'calibration') { calibration(); return; }
  if (D.page !== 'trial') return;
  whenTab(function () { trialPage(); });

  function trialPage() {
    // ---- storage of unacknowledged events and the draft reason (one store per tab) --------------------------
    var KEY = 'modprefs:' + D.token + ':' + TAB;
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

    // ---- event log --------------------------------------------------------------------------------------
    var pageId = randomId();
    var counter = 0;
    var URGENT = { onset: 1, play: 1, ended: 1, reveal: 1, submit: 1 };
    var submitted = false;
    var inflight = false;
    var timer = null;
    var failures = 0;
    var notice = document.getElementById('server-notice');
    var M = window.__modprefs;
    M.page = pageId; M.events = []; M.heard = {}; M.revealed = false; M.responses = []; M.conflicts = [];
    M.refused = [];
    M.pending = function () { return store.pending.length + (inflight ? 1 : 0); };

    function log(kind, pos, x, field) {
      var e = { id: pageId + '-' + (counter++), kind: kind, pos: pos || null, t: Date.now(),
                x: (x === undefined || x === null || !isFinite(x)) ? null : Number(x), field: field || null };
      store.pending.push(e);
      save();
      M.events.push(e);
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
      if (inflight || store.pending.length === 0 || !session.live) return;  // a tab that is not live sends nothing
      inflight = true;
      var batch = store.pending.slice(0, 100);
      var wait = null;
      fetch(D.events_url, {
        method: 'POST', credentials: 'same-origin', keepalive: true,
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': D.csrf, 'Accept': 'application/json' },
        body: JSON.stringify({ trial: D.trial, tab: TAB, events: batch })
      }).then(function (r) {
        if (r.status === 429) wait = 1000 * Number(r.headers.get('Retry-After') || 1);
        if (r.status === 409) {
          return r.json().then(function (b) { if (b && b.superseded) superseded(); failures++; return null; });
        }
        if (!r.ok) { failures++; return null; }
        return r.json();
      }).then(function (res) {
        if (!res) return;
        failures = 0;
        M.responses.push(res);
        acknowledge(batch.map(function (e) { return e.id; }));  // stored, duplicate, conflict or refused: final
        applyServer(res);
        if (res.state && res.state !== 'trials' && !submitted) window.location.reload();  // e.g. the session expired
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
      (res.conflicts || []).forEach(function (id) { M.conflicts.push(id); });
      if (res.conflicts && res.conflicts.length && window.console) console.warn('modprefs: events in conflict', res.conflicts);
      (res.refused || []).forEach(function (r) {
        M.refused.push(r);
        if (r.kind === 'ended' && players[r.pos] && (res.heard || []).indexOf(r.pos) < 0) relock(r.pos, r.message);
        if (r.kind === 'reveal' && !res.revealed) unreveal(r.message);
      });
      (res.heard || []).forEach(function (pos) { if (players[pos] && !players[pos].heard) markHeard(pos); });
      if (res.revealed && !revealed) doReveal(false);
    }

    // leaving or reloading the page: send what is unacknowledged (the CSRF token travels in the body);
    // it also stays in storage, and the next page of this tab sends it again (stored once by id)
    window.addEventListener('pagehide', function () {
      controls.forEach(function (c) { c.settle(); });
      if (!store.pending.length || submitted || !session.live || !navigator.sendBeacon) return;
      var body = JSON.stringify({ trial: D.trial, csrf: D.csrf, tab: TAB, events: store.pending.slice(0, 100) });
      navigator.sendBeacon(D.events_url, new Blob([body], { type: 'application/json' }));
    });

    // ---- ratings: sliders and category points -------------------------------------------------------------
    // Changes are counted as the participant makes them: a pointer gesture (pointerdown .. release, or a click on a
    // point) is one change; a keyboard burst (arrow, Page, Home/End keys with less than KEY_SETTLE_MS between them)
    // is one change, committed when the keys settle, on Enter/Space, when the control loses focus, or at
    // submission. An unset slider reads "not rated" to assistive technology. By keyboard an unset slider starts
    // from no value, not from its hidden middle: the first key puts it at the end it enters from (Right, Up,
    // Page Up, Home: the scale's minimum; Left, Down, Page Down, End: its maximum), and the burst goes on from
    // there, so the first value logged is the participant's own. Category points are radio buttons: Tab reaches
    // the group, Space selects the focused point, the arrow keys move and select.
    var KEY_SETTLE_MS = 700;
    var NAV_KEYS = { ArrowLeft: 1, ArrowRight: 1, ArrowUp: 1, ArrowDown: 1, PageUp: 1, PageDown: 1, Home: 1, End: 1 };
    var FROM_MIN = { ArrowRight: 1, ArrowUp: 1, PageUp: 1, Home: 1 };
    function commit(c) {
      if (c.locked()) return;
      if (c.keyTimer) { clearTimeout(c.keyTimer); c.keyTimer = null; }
      c.markSet();
      var v = c.value();
      if (v !== null && c.last !== v) {
        c.last = v;
        log('slider', c.pos, v, c.field);
      }
      update();
    }
    function burst(c) {  // a key of a keyboard burst: committed when the keys settle
      clearTimeout(c.keyTimer);
      c.keyTimer = setTimeout(function () { c.keyTimer = null; commit(c); }, KEY_SETTLE_MS);
    }
    function baseControl(el) {
      var c = { el: el, pos: el.dataset.pos, field: el.dataset.field, last: null, keyTimer: null };
      c.locked = function () { return el.disabled; };
      c.setLocked = function (b) { el.disabled = b; };
      c.settle = function () {  // the keyboard burst in progress (if any) is over: commit it
        if (!c.keyTimer) return;
        clearTimeout(c.keyTimer);
        c.keyTimer = null;
        commit(c);
      };
      return c;
    }
    function sliderControl(s) {
      var c = baseControl(s);
      function endLabel(which) {
        var el = document.getElementById('end-' + which + '-' + c.field + '-' + c.pos);
        return el ? el.textContent.trim() : '';
      }
      c.isSet = function () { return !s.classList.contains('unset'); };
      c.value = function () { return c.isSet() ? Number(s.value) : null; };
      // the unset state is said twice: by aria-valuetext (what screen readers announce as the value) and in the
      // description, since the value itself stays a number (the hidden middle) in the accessibility tree
      var state = document.getElementById('state-' + c.field + '-' + c.pos);
      c.describe = function () {
        if (state) state.textContent = c.isSet() ? '' : 'Not rated yet.';
        if (!c.isSet()) { s.setAttribute('aria-valuetext', 'not rated'); return; }
        var v = s.value;
        var text = v + ' (from ' + s.min + ', ' + endLabel('min') + ', to ' + s.max + ', ' + endLabel('max') + ')';
        if (v === s.min) text = v + ', ' + endLabel('min');
        if (v === s.max) text = v + ', ' + endLabel('max');
        s.setAttribute('aria-valuetext', text);
      };
      c.markSet = function () {
        if (!c.isSet()) { s.classList.remove('unset'); s.name = c.field + '_' + c.pos; }
        c.describe();
      };
      c.restore = function (v) { s.value = String(v); c.markSet(); c.last = Number(s.value); };
      c.describe();
      var armed = false;
      s.addEventListener('pointerdown', function (ev) {
        if (s.disabled) { ev.preventDefault(); armed = false; return; }
        armed = true;
      });
      s.addEventListener('pointercancel', function () { armed = false; });
      s.addEventListener('input', function () { if (s.disabled) return; c.markSet(); update(); });
      s.addEventListener('change', function () {
        if (s.disabled) return;
        armed = false;
        if (c.keyTimer) { c.markSet(); update(); return; }  // within a keyboard burst: committed when it settles
        commit(c);
      });
      s.addEventListener('keydown', function (ev) {
        if (s.disabled) return;
        if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); commit(c); return; }
        if (NAV_KEYS[ev.key] && !ev.altKey && !ev.ctrlKey && !ev.metaKey) {
          if (!c.isSet()) {  // from no value: the end the key enters from
            ev.preventDefault();
            s.value = FROM_MIN[ev.key] ? s.min : s.max;
            c.markSet();
            update();
          }
          burst(c);
        }
      });
      s.addEventListener('blur', c.settle);
      // a click or tap that leaves the value where it was fires no input/change: set it at that value
      document.addEventListener('pointerup', function () {
        if (!armed) return;
        armed = false;
        setTimeout(function () { if (!s.disabled && c.last === null) commit(c); }, 30);
      }, true);
      return c;
    }
    function pointsControl(fs) {
      var c = baseControl(fs);
      var radios = Array.prototype.slice.call(fs.querySelectorAll('input[type=radio]'));
      var keyAt = 0;
      function checked() { return radios.filter(function (r) { return r.checked; })[0] || null; }
      c.isSet = function () { return !!checked(); };
      c.value = function () { var r = checked(); return r ? Number(r.value) : null; };
      c.markSet = function () {};
      c.restore = function (v) {
        radios.forEach(function (r) { r.checked = Number(r.value) === Number(v); });
        c.last = c.value();
      };
      fs.addEventListener('keydown', function (ev) {
        if (fs.disabled) return;
        if (NAV_KEYS[ev.key]) keyAt = Date.now();
        if (ev.key === 'Enter') { ev.preventDefault(); c.settle(); }  // no implicit submission from a rating
      });
      radios.forEach(function (r) {
        r.addEventListener('change', function () {
          if (fs.disabled) return;
          if (Date.now() - keyAt < 200) { burst(c); update(); } else commit(c);
        });
      });
      fs.addEventListener('focusout', function (ev) { if (!fs.contains(ev.relatedTarget)) c.settle(); });
      return c;
    }
    var controls = Array.prototype.slice.call(document.querySelectorAll('input.slider, fieldset.points')).map(function (el) {
      return el.tagName === 'FIELDSET' ? pointsControl(el) : sliderControl(el);
    });
    function controlsOf(pos) { return controls.filter(function (c) { return c.pos === pos; }); }
    function restoreControl(name, v) {
      if (v === null || v === undefined) return;
      controls.forEach(function (c) { if (c.field + '_' + c.pos === name) c.restore(v); });
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
    var RETRY_MS = [1000, 2000, 4000];  // a clip that fails to load is tried again after these waits
    var MEDIA_ERRORS = { 1: 'MEDIA_ERR_ABORTED', 2: 'MEDIA_ERR_NETWORK', 3: 'MEDIA_ERR_DECODE', 4: 'MEDIA_ERR_SRC_NOT_SUPPORTED' };
    function setupPlayer(el) {
      var pos = el.dataset.pos;
      var a = el.querySelector('audio');
      var btn = el.querySelector('button.play');
      var fill = el.querySelector('.progressbar .fill');
      var bar = el.querySelector('.progressbar');
      var status = el.querySelector('.status');
      var time = el.querySelector('.time');
      var load = el.querySelector('.loadstate');
      var src = a.getAttribute('src');
      var p = { pos: pos, audio: a, button: btn, status: status, fill: fill, bar: bar, heard: false, maxT: 0, tries: 0 };
      function showTime() {  // elapsed / total
        if (time) time.textContent = clock(a.currentTime || 0) + ' / ' + clock(isFinite(a.duration) ? a.duration : 0);
      }
      ['loadedmetadata', 'durationchange', 'timeupdate', 'seeked', 'ended'].forEach(function (k) { a.addEventListener(k, showTime); });
      showTime();
      players[pos] = p;
      M.heard[pos] = false;
      a.controls = false;
      a.addEventListener('contextmenu', function (ev) { ev.preventDefault(); });

      // loading: a visible state; a failure is retried, then reported (the problem page)
      function ready() { if (load) { load.textContent = 'Audio ready.'; load.classList.remove('failed'); } }
      function failed() {
        var code = a.error ? a.error.code : 0;
        if (p.tries < RETRY_MS.length) {
          var wait = RETRY_MS[p.tries++];
          if (load) {
            load.textContent = 'The audio did not load; trying again (' + p.tries + ' of ' + RETRY_MS.length + ')…';
            load.classList.add('failed');
          }
          setTimeout(function () { a.src = src + (src.indexOf('?') < 0 ? '?' : '&') + 'retry=' + p.tries; a.load(); }, wait);
          return;
        }
        if (load) load.textContent = 'The audio could not be loaded.';
        mediaFailed(pos, code, p.tries + 1, src);
      }
      a.addEventListener('canplaythrough', ready);
      a.addEventListener('loadeddata', ready);
      a.addEventListener('error', failed);
      if (a.error) failed();  // failed before this script ran
      else if (a.readyState >= 3) ready();

      btn.addEventListener('click', function () {
        if (btn.disabled) return;
        if (a.paused) {
          Object.keys(players).forEach(function (k) { if (k !== pos && !players[k].audio.paused) players[k].audio.pause(); });
          if (a.ended || (p.heard && a.duration && a.currentTime >= a.duration - 0.05)) a.currentTime = 0;
          var pr = a.play();
          if (pr && pr.catch) {
            pr.catch(function (err) {
              if (a.error) return;  // a load failure: handled above (retries, then the problem page)
              status.textContent = (err && err.name === 'NotAllowedError')
                ? 'Playback was blocked by the browser. Press play again.'
                : 'The audio could not be played (' + (err && err.name) + '). Press play again.';
            });
          }
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
    var reported = false;
    function mediaFailed(pos, code, attempts, src) {
      // after the last retry: what the server answers for the clip, reported as an incident, then the problem page
      if (reported) return;
      reported = true;
      var what = 'Response ' + pos + "'s recording did not load after " + attempts + ' attempts (' +
        (MEDIA_ERRORS[code] || 'MediaError ' + code) + ')';
      fetch(src, { credentials: 'same-origin', headers: { Range: 'bytes=0-0' }, cache: 'no-store' })
        .then(function (r) { return r.ok ? '' : '; the server answered HTTP ' + r.status; })
        .catch(function () { return '; the server could not be reached'; })
        .then(function (answer) { report(what + answer, 0); });
    }
    function report(detail, attempt) {
      fetch(D.problem_url, {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': D.csrf, 'Accept': 'application/json' },
        body: JSON.stringify({ tab: TAB, trial: D.trial, what: 'media', detail: detail })
      }).then(function (r) { return r.ok ? r.json() : null; }).then(function (res) {
        if (!res) throw new Error('not reported');
        window.location.assign(res.next);
      }).catch(function () {
        say('The audio could not be loaded (' + detail + '). Please check your connection and reload the page.');
        if (attempt < 5) setTimeout(function () { report(detail, attempt + 1); }, 2000);
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
      M.heard[pos] = true;
      if (p.audio.paused) {
        label(p, 'Replay');
        p.status.textContent = 'You can replay this response.';
      }
      controlsOf(pos).forEach(function (c) { c.setLocked(false); });
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
      M.heard[pos] = false;
      if (!p.audio.paused) p.audio.pause();
      p.audio.currentTime = 0;
      p.fill.style.width = '0%';
      label(p, 'Play');
      p.bar.setAttribute('aria-disabled', 'true');
      p.status.textContent = 'Please listen to this response again, in full.';
      controlsOf(pos).forEach(function (c) { c.setLocked(true); });
      say('The server could not confirm that Response ' + pos + ' was heard in full (' + why + '). Please listen to it again.');
      update();
    }
    if (audio) Array.prototype.slice.call(document.querySelectorAll('.player')).forEach(setupPlayer);

    // ---- text condition: Response B after Response A -------------------------------------------------
    var reveal = D.reveal || { mode: 'off', min_read_s: 0 };
    var revealed = audio || reveal.mode === 'off';
    var revealBox = document.getElementById('reveal-box');
    var revealBtn = document.getElementById('reveal-B');
    var revealStatus = document.getElementById('reveal-status');
    var revealTimer = null;
    M.revealed = revealed;
    function doReveal(logIt) {
      if (revealed) return;
      revealed = true;
      M.revealed = true;
      clearTimeout(revealTimer);
      var b = document.getElementById('response-B');
      if (b) b.hidden = false;
      var focusB = !!revealBox && (revealBox.contains(document.activeElement) || document.activeElement === document.body);
      if (revealBox) revealBox.hidden = true;
      controlsOf('B').forEach(function (c) { c.setLocked(false); });
      var heading = document.getElementById('heading-B');
      if (heading && focusB && logIt) heading.focus();  // keyboard users: on to the response they just revealed
      if (logIt) log('reveal', 'B');
      update();
    }
    function startReading() {
      clearTimeout(revealTimer);
      revealTimer = setTimeout(function () {
        if (reveal.mode === 'auto') { doReveal(true); return; }
        if (revealBtn) revealBtn.disabled = false;
        // announced (a live region): the button that was unavailable can now be used
        if (revealStatus) revealStatus.textContent = 'You can now show Response B.';
      }, 1000 * Number(reveal.min_read_s || 0));
    }
    function unreveal(why) {
      revealed = false;
      M.revealed = false;
      var b = document.getElementById('response-B');
      if (b) b.hidden = true;
      if (revealBox) revealBox.hidden = false;
      if (revealBtn) revealBtn.disabled = true;
      if (revealStatus) revealStatus.textContent = 'Read Response A first; then you can show Response B.';
      controlsOf('B').forEach(function (c) { c.setLocked(true); });
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
    function allRated() { return controls.every(function (c) { return c.isSet() && !c.locked(); }); }
    function update() {
      var ready = allHeard() && revealed && allRated();
      fields.disabled = !ready;
      var chosen = prefs.some(function (r) { return r.checked; });
      submit.disabled = !(ready && chosen) || !session.claimed;
      hint.textContent = !allHeard() ? 'Listen to both responses in full to continue.'
        : !revealed ? 'Read Response A, then show Response B, to continue.'
        : !allRated() ? 'Rate every response to continue.'
        : !chosen ? 'Choose the response you prefer (or tie).' : '';
    }

    // ---- the trial as this tab left it (the claim's answer), then the page goes live ------------------------
    onClaim(function (res) {
      var st = res.tab_state || { heard: [], revealed: false, restore: { sliders: {}, preference: null } };
      (st.heard || []).forEach(function (pos) { if (players[pos]) markHeard(pos); });
      if (st.revealed) doReveal(false);
      var restore = st.restore || { sliders: {}, preference: null };
      Object.keys(restore.sliders || {}).forEach(function (name) { restoreControl(name, restore.sliders[name]); });
      var choice = restore.preference;
      store.pending.forEach(function (e) {  // newer than the server's log: not acknowledged yet
        if (e.kind === 'slider') restoreControl(e.field + '_' + e.pos, e.x);
        if (e.kind === 'preference') choice = e.pos || 'tie';
      });
      prefs.forEach(function (r) { r.checked = r.value === choice; });
      if (store.draft) reason.value = store.draft;
      if (st.elsewhere) {
        var tabNotice = document.getElementById('tab-notice');
        tabNotice.textContent = 'This task was started in another tab or window. Here it starts again from the ' +
          'beginning; what was done there is not used.';
        tabNotice.hidden = false;
      }
      if (!revealed) startReading();
      update();
      log('onset');
      // (not while the page goes away: a reload or the next page hides it too, after its pagehide)
      var unloading = false;
      window.addEventListener('pagehide', function () { unloading = true; });
      window.addEventListener('pageshow', function () { unloading = false; });
      function attention(kind) { if (!submitted && !unloading) log(kind); }
      document.addEventListener('visibilitychange', function () {
        attention(document.visibilityState === 'hidden' ? 'hidden' : 'visible');
      });
      window.addEventListener('blur', function () { attention('blur'); });
      window.addEventListener('focus', function () { attention('focus'); });
    });
    update();

    form.addEventListener('submit', function (ev) {
      controls.forEach(function (c) { c.settle(); });
      if (submitted || submit.disabled) { ev.preventDefault(); return; }
      if (store.pending.length > 250) {  // too many for the form: send the backlog first, then submit
        ev.preventDefault();
        flush();
        setTimeout(function () { if (!submitted) submit.click(); }, 500);
        return;
      }
      submitted = true;
      M.submitting = true;
      var e = log('submit');
      clearTimeout(timer); timer = null;
      form.elements.submit_t.value = String(e.t);
      form.elements.tab.value = TAB;
      form.elements.events.value = JSON.stringify(store.pending.slice(-250));
      submit.disabled = true;
      submit.textContent = 'Saving…';
    });
    // a page restored from the back/forward cache must not resubmit a stale form
    window.addEventListener('pageshow', function (ev) { if (ev.persisted) window.location.reload(); });
  }

  // ---- headphone check -------------------------------------------------------------------------------
  function headphoneCheck() {
    var cal = document.getElementById('hp-calibration');
    var calBtn = document.getElementById('hp-calibrate');
    var audios = [];
    calBtn.addEventListener('click', function () { audios.forEach(function (a) { a.pause(); }); cal.currentTime = 0; cal.play(); });
    var qs = Array.prototype.slice.call(document.querySelectorAll('.hp-question'));
    var submitBtn = document.getElementById('hp-submit');
    var hpHint = document.getElementById('hp-hint');
    window.__modprefs.hpEnded = {};
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
      var state = document.getElementById('hp-state-' + i);
      var radios = Array.prototype.slice.call(q.querySelectorAll('input[type=radio]'));
      var played = false;
      audios.push(a);
      // each sound plays once: the button says so (aria-disabled) but stays focusable, so the keyboard focus
      // stays on it instead of falling back to the page (a disabled button loses the focus)
      btn.addEventListener('click', function () {
        if (played) return;
        played = true;
        audios.forEach(function (o) { if (o !== a) o.pause(); });
        cal.pause();
        btn.setAttribute('aria-disabled', 'true');
        btn.textContent = 'Playing…';
        state.textContent = 'Playing: listen to the three tones.';
        var pr = a.play();
        if (pr && pr.catch) {
          pr.catch(function () {
            played = false;
            btn.removeAttribute('aria-disabled');
            btn.textContent = 'Play';
            state.textContent = 'Playback was blocked by the browser. Press play again.';
          });
        }
      });
      a.addEventListener('ended', function () {
        btn.textContent = 'Played';
        state.textContent = 'Played (each sound plays once). Choose the quietest tone.';
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
    window.__modprefs.calPlayed = false;
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
    if (D.first_error) {  // the server refused the answers: on to the first field marked
      var first = document.getElementById(D.first_error) || document.querySelector('input[name="' + D.first_error + '"]');
      if (first) first.focus();
    }
  }
})();
