/* modprefs annotation app: the admin dashboard's updates (no meta refresh: WCAG 2.2.1).
 *
 * Every refresh_s seconds the page fetches itself (the browser sends the same admin credentials), and replaces
 * the sections marked data-refresh with their new content (tables, lists, the intake state; a <details> keeps
 * its open state; the form and its buttons are not replaced, so the focus stays where it is). The live region
 * #refresh-status says what changed (only then), or that the update failed; #refresh-time (not live) when it last
 * checked.
 */
(function () {
  'use strict';
  var dataEl = document.getElementById('admin-data');
  if (!dataEl) return;
  var D = JSON.parse(dataEl.textContent);
  var status = document.getElementById('refresh-status');
  window.__modprefsAdmin = { updates: 0, failures: 0 };

  function text(id, doc) {
    var el = (doc || document).getElementById(id);
    return el ? el.textContent.replace(/\s+/g, ' ').trim() : '';
  }
  function clock() {
    var d = new Date();
    return ('0' + d.getHours()).slice(-2) + ':' + ('0' + d.getMinutes()).slice(-2) + ':' + ('0' + d.getSeconds()).slice(-2);
  }
  function update() {
    fetch(D.url, { credentials: 'same-origin', headers: { 'Accept': 'text/html' }, cache: 'no-store' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var changed = [];
        Array.prototype.forEach.call(document.querySelectorAll('[data-refresh]'), function (el) {
          var fresh = doc.getElementById(el.id);
          if (!fresh || fresh.innerHTML === el.innerHTML) return;
          var open = el.tagName === 'DETAILS' && el.open;
          el.innerHTML = fresh.innerHTML;
          if (el.tagName === 'DETAILS') el.open = open;
          var heading = el.previousElementSibling;
          changed.push(heading && /^H[23]$/.test(heading.tagName) ? heading.textContent.trim() : el.id);
        });
        window.__modprefsAdmin.updates++;
        document.getElementById('refresh-time').textContent = clock();
        // the live region speaks only when something changed (not every refresh_s seconds)
        if (changed.length) status.textContent = 'Updated at ' + clock() + ': ' + changed.join(', ') + ' changed.';
      })
      .catch(function (e) {
        window.__modprefsAdmin.failures++;
        status.textContent = 'The update at ' + clock() + ' failed (' + e.message + '); the next try is in ' + D.refresh_s + ' seconds.';
      });
  }
  window.__modprefsAdmin.update = update;
  setInterval(update, 1000 * Number(D.refresh_s || 30));
})();
