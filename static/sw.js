// Maven's service worker: it shows the notifications Maven pushes of calls waiting for the
// owner's approval, and opens the approval page when one is tapped (docs/design.md#rule-30).
// A notification carries the tool's name and the link, nothing that approves: the page needs
// the owner's session, and Approve a passkey. It caches nothing and handles no fetch.
'use strict';

self.addEventListener('install', function () {
  // A new version takes over at once: it only shows notifications.
  self.skipWaiting();
});

self.addEventListener('activate', function (event) {
  event.waitUntil(self.clients.claim());
});

// link is the page a notification opens: an http(s) URL as Maven sent it, else Maven's root.
function link(raw) {
  try {
    const url = new URL(raw, self.location.origin);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url.href;
  } catch (_) {
    // Not a URL: Maven's root.
  }
  return new URL('/', self.location.origin).href;
}

self.addEventListener('push', function (event) {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (_) {
    data = {};
  }
  // Every push shows a notification (userVisibleOnly): browsers require it.
  event.waitUntil(self.registration.showNotification(data.title || 'Maven', {
    body: data.body || '',
    icon: '/static/icon-192.png',
    badge: '/static/icon-192.png',
    data: { url: link(data.url) },
  }));
});

self.addEventListener('notificationclick', function (event) {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || link('/');
  event.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (windows) {
    for (const w of windows) {
      if (w.url === url && 'focus' in w) return w.focus();
    }
    return self.clients.openWindow(url);
  }));
});
