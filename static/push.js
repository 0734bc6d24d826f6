// Maven's notifications card (views/templates/push/_subscribe.html): it registers the service
// worker (sw.js, at the root so that it covers every page), says whether this browser gets
// notifications, and turns them on: the Push API's subscription, made with Maven's VAPID key,
// goes to POST /push/subscribe, which answers with the card. Which of the subscribed browsers
// is this one is found by a hash of its endpoint, so the page never holds an endpoint. The
// Content-Security-Policy forbids inline script, so it all lives here, loaded with defer.
(function () {
  'use strict';

  function card() {
    return document.getElementById('push');
  }

  function supported() {
    return window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
  }

  // An iPhone or iPad offers Web Push only to a web app added to the Home Screen.
  function appleMobile() {
    return /iPhone|iPad|iPod/.test(navigator.userAgent) ||
      (navigator.platform === 'MacIntel' && navigator.maxTouchPoints > 1);
  }

  function registration() {
    return navigator.serviceWorker.register('/sw.js', { scope: '/' });
  }

  function keyBytes(b64u) {
    const s = b64u.replace(/-/g, '+').replace(/_/g, '/');
    const bin = atob(s + '='.repeat((4 - (s.length % 4)) % 4));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  // endpointHash is what the card shows of a subscription: the first 16 hex digits of the
  // SHA-256 of its endpoint.
  async function endpointHash(endpoint) {
    const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(endpoint)));
    return Array.from(sum.slice(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
  }

  function show(el, state, why, canSubscribe) {
    el.querySelector('[data-push-state]').textContent = state;
    el.querySelectorAll('[data-push-why]').forEach(function (p) { p.hidden = p.dataset.pushWhy !== why; });
    const button = el.querySelector('[data-action="push-subscribe"]');
    if (button) button.hidden = !canSubscribe;
  }

  // refresh says what this browser can do, and marks it among the subscribed browsers.
  async function refresh() {
    const el = card();
    if (!el) return;
    if (!supported()) {
      if (!window.isSecureContext) show(el, 'This browser cannot get notifications here.', 'insecure', false);
      else if (appleMobile()) show(el, 'This browser cannot get notifications yet.', 'ios', false);
      else show(el, 'This browser cannot get notifications.', '', false);
      return;
    }
    let sub = null;
    try {
      const reg = await registration();
      sub = await reg.pushManager.getSubscription();
    } catch (err) {
      show(el, 'This browser could not start Maven’s notifications: ' + (err && err.message ? err.message : err), '', false);
      return;
    }
    const listed = sub ? el.querySelector('[data-endpoint-hash="' + (await endpointHash(sub.endpoint)) + '"]') : null;
    el.querySelectorAll('[data-this-browser]').forEach(function (b) { b.hidden = true; });
    if (listed) {
      listed.querySelector('[data-this-browser]').hidden = false;
      show(el, 'This browser gets notifications.', '', false);
    } else if (Notification.permission === 'denied') {
      show(el, 'Notifications are blocked for Maven in this browser’s settings; allow them there first.', '', false);
    } else {
      show(el, 'This browser does not get notifications.', '', true);
    }
  }

  function say(button, message) {
    const area = button.parentElement && button.parentElement.querySelector('.feedback');
    if (area) {
      area.textContent = message;
      area.dataset.kind = 'error';
    }
  }

  // subscribe asks for permission (within the tap, as Safari requires), subscribes with
  // Maven's key (again, if the browser holds a subscription made with another) and sends the
  // subscription to Maven.
  async function subscribe(button) {
    const el = card();
    if (!el || !window.htmx) return;
    if (await Notification.requestPermission() !== 'granted') {
      say(button, 'Notifications were not allowed, so nothing changed.');
      return;
    }
    const reg = await registration();
    await navigator.serviceWorker.ready;
    const key = keyBytes(el.dataset.vapidKey);
    let sub = await reg.pushManager.getSubscription();
    if (sub) {
      const had = sub.options && sub.options.applicationServerKey ? new Uint8Array(sub.options.applicationServerKey) : null;
      if (!had || had.length !== key.length || had.some((b, i) => b !== key[i])) {
        await sub.unsubscribe();
        sub = null;
      }
    }
    if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    const json = sub.toJSON();
    await window.htmx.ajax('POST', '/push/subscribe', {
      target: '#push',
      swap: 'outerHTML',
      values: { endpoint: json.endpoint, p256dh: json.keys.p256dh, auth: json.keys.auth },
    });
  }

  document.addEventListener('click', async function (event) {
    const button = event.target instanceof Element ? event.target.closest('button[data-action="push-subscribe"]') : null;
    if (!button || button.disabled) return;
    button.disabled = true;
    try {
      await subscribe(button);
    } catch (err) {
      say(button, 'This browser could not subscribe: ' + (err && err.message ? err.message : err));
    } finally {
      button.disabled = false;
    }
  });

  // The card swapped (an action on it, or the page around it): say again what this browser does.
  document.addEventListener('htmx:afterSettle', function () {
    if (card()) refresh();
  });

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', refresh);
  else refresh();
})();
