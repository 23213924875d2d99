/* modprefs annotation app: the participant pages' behaviour (no inline scripts: CSP script-src 'self').
 *
 * Trial page protocol (paper §3.2.2):
 *  - sliders 1..100 show no number and no handle until first touched (no anchoring); an untouched
 *    slider has no name, so it is not submitted and the server refuses the trial;
 *  - audio: Response B can be played only after Response A has been heard in full; a response's
 *    sliders unlock on its clip's first `ended` event; on the first listen seeking and playback-rate
 *    changes are refused (reverted and logged); after it, replay and seeking are free;
 *  - every event (onset, play, pause, ended, seek, refused seek, slider change, preference, submit)
 *    is logged with a client timestamp and sent to the server in batches; unsent events travel with
 *    the submission. The server derives the trial measures from this log.
 */
(function () {
  'use strict';
  var dataEl = document.getElementById('page-data');
  if (!dataEl) return;
  var D = JSON.parse(dataEl.textContent);

  if (D.page === 'demographics') { demographics(); return; }
  if (D.page !== 'trial') return;

  // ---- event log -------------------------------------------------------------------------------
  var seq = D.next_seq || 0;
  var submitted = false;
  var queue = [];
  var inflight = false;
  var timer = null;
  var failures = 0;
  window.__modprefs = { events: [], heard: {}, pending: function () { return queue.length + (inflight ? 1 : 0); } };

  function log(kind, pos, x, field) {
    var e = { seq: seq++, kind: kind, pos: pos || null, t: Date.now(),
              x: (x === undefined || x === null || !isFinite(x)) ? null : Number(x), field: field || null };
    queue.push(e);
    window.__modprefs.events.push(e);
    if (kind === 'ended' || kind === 'onset') { clearTimeout(timer); timer = null; schedule(0); } else { schedule(250); }
    return e;
  }
  function schedule(ms) { if (!timer) timer = setTimeout(flush, ms); }
  function flush() {
    timer = null;
    if (inflight || queue.length === 0) return;
    inflight = true;
    var batch = queue.slice(0, 100);
    fetch(D.events_url, {
      method: 'POST', credentials: 'same-origin', keepalive: true,
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': D.csrf, 'Accept': 'application/json' },
      body: JSON.stringify({ trial: D.trial, events: batch })
    }).then(function (r) {
      if (r.ok) { queue.splice(0, batch.length); failures = 0; } else { failures++; }
    }).catch(function () { failures++; }).then(function () {
      inflight = false;
      if (queue.length) schedule(Math.min(10000, 250 * Math.pow(2, failures)));
    });
  }

  log('onset');
  // leaving or reloading the page: send what is still queued (the CSRF token travels in the body)
  window.addEventListener('pagehide', function () {
    if (!queue.length || submitted || !navigator.sendBeacon) return;
    var body = JSON.stringify({ trial: D.trial, csrf: D.csrf, events: queue.slice(0, 100) });
    navigator.sendBeacon(D.events_url, new Blob([body], { type: 'application/json' }));
  });

  // ---- sliders ------------------------------------------------------------------------------------
  var sliders = Array.prototype.slice.call(document.querySelectorAll('input.slider'));
  sliders.forEach(function (s) {
    function touch() {
      if (s.classList.contains('unset')) {
        s.classList.remove('unset');
        s.name = s.dataset.field + '_' + s.dataset.pos;
      }
    }
    s.addEventListener('pointerdown', touch);
    s.addEventListener('keydown', touch);
    s.addEventListener('input', function () { touch(); update(); });
    s.addEventListener('change', function () { touch(); log('slider', s.dataset.pos, Number(s.value), s.dataset.field); update(); });
  });

  var prefs = Array.prototype.slice.call(document.querySelectorAll('input[name="preference"]'));
  prefs.forEach(function (r) { r.addEventListener('change', function () { log('preference', r.value === 'tie' ? null : r.value); update(); }); });

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
    var p = { pos: pos, audio: a, button: btn, heard: el.dataset.heard === 'true', maxT: 0 };
    players[pos] = p;
    window.__modprefs.heard[pos] = p.heard;
    a.controls = false;
    if (p.heard) btn.textContent = 'Replay';
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
    a.addEventListener('play', function () { log('play', pos, a.currentTime); btn.textContent = 'Pause'; status.textContent = p.heard ? 'Replaying…' : 'Playing… listen to the whole response.'; });
    a.addEventListener('pause', function () {
      if (a.ended) return;
      log('pause', pos, a.currentTime); btn.textContent = 'Resume';
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
      btn.textContent = 'Replay';
      if (!p.heard) {
        p.heard = true;
        window.__modprefs.heard[pos] = true;
        unlock(pos);
      }
      status.textContent = 'You can replay this response.';
      fill.style.width = '100%';
    });
    a.addEventListener('timeupdate', function () {
      if (!p.heard && !a.seeking && a.currentTime > p.maxT && a.currentTime - p.maxT < 1.5) p.maxT = a.currentTime;
      if (a.duration) fill.style.width = (100 * a.currentTime / a.duration).toFixed(1) + '%';
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
  function unlock(pos) {
    sliders.forEach(function (s) { if (s.dataset.pos === pos) s.disabled = false; });
    if (pos === 'A' && players.B) {
      players.B.button.disabled = false;
      var st = document.getElementById('status-B');
      if (st && !players.B.heard) st.textContent = 'Press play and listen to the whole response.';
    }
    update();
  }

  // ---- completeness and submission ----------------------------------------------------------------
  var form = document.getElementById('trial-form');
  var submit = document.getElementById('submit');
  var fields = document.getElementById('preference-fields');
  var hint = document.getElementById('submit-hint');
  function allHeard() { return !audio || Object.keys(players).every(function (k) { return players[k].heard; }); }
  function allRated() { return sliders.every(function (s) { return !s.classList.contains('unset') && !s.disabled; }); }
  function update() {
    var ready = allHeard() && allRated();
    fields.disabled = !ready;
    var chosen = prefs.some(function (r) { return r.checked; });
    submit.disabled = !(ready && chosen);
    hint.textContent = !allHeard() ? 'Listen to both responses in full to continue.'
      : !allRated() ? 'Move every slider to continue.'
      : !chosen ? 'Choose the response you prefer (or tie).' : '';
  }
  update();

  form.addEventListener('submit', function (ev) {
    if (submitted || submit.disabled) { ev.preventDefault(); return; }
    submitted = true;
    var e = log('submit');
    clearTimeout(timer); timer = null;
    form.elements.submit_t.value = String(e.t);
    form.elements.events.value = JSON.stringify(queue.slice(-250));
    submit.disabled = true;
    submit.textContent = 'Saving…';
  });
  // a page restored from the back/forward cache must not resubmit a stale form
  window.addEventListener('pageshow', function (ev) { if (ev.persisted) window.location.reload(); });

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
