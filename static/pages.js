// Maven's page behaviour that needs no passkey (maven.js does the ceremonies): the servers card
// that refreshes itself without losing what the owner opened, ticked or focused; the notice of
// new tools; selecting rows for one approval; focus after an action; Copy and Download of a
// recovery code; and, on the passkey pages, saying plainly when this address cannot use passkeys.
// The Content-Security-Policy forbids inline script, so it all lives here, loaded with defer.
(function () {
  'use strict';

  // ---- the servers card: live, but never under the owner's hands ---------------------------

  // The owner's own choice to open or close a server's details, by server, for as long as the
  // server stays in the state it was in: a poll keeps it, a change of state shows the default.
  const opened = new Map();
  let restoring = false;

  document.addEventListener('toggle', function (event) {
    const details = event.target;
    if (restoring || !(details instanceof HTMLDetailsElement)) return;
    if (details.classList.contains('pending-command')) {
      // A command line waiting for approval, unfolded: it stays so for as long as it waits.
      opened.set('command:' + details.dataset.command, { open: details.open });
      return;
    }
    if (!details.classList.contains('server-details')) return;
    const server = details.closest('[data-server]');
    if (server) opened.set(server.dataset.server, { open: details.open, state: server.dataset.state });
  }, true);

  // What a poll of the card must not undo: ticked command lines and the focused control.
  let kept = null;

  // polls reports whether elt is a poll that swaps part of a page: the servers card, or a live
  // list or status of the pending calls ([data-live]).
  function polls(elt) {
    return elt instanceof Element && (elt.id === 'mcp-servers' || elt.hasAttribute('data-live'));
  }

  document.addEventListener('htmx:beforeRequest', function (event) {
    const elt = event.detail && event.detail.elt;
    // While a passkey prompt is open, the card (or a pending call's page) stays as it is: the
    // prompt's button must not be swapped away under it.
    if (polls(elt) && document.documentElement.dataset.ceremony) {
      event.preventDefault();
    }
  });

  document.addEventListener('htmx:beforeSwap', function (event) {
    const target = event.detail && event.detail.target;
    if (!(target instanceof Element)) return;
    // A poll that was on its way when the prompt opened is not swapped in either (the answer
    // to the action the prompt approved is).
    if (document.documentElement.dataset.ceremony && polls(event.detail.elt)) {
      event.detail.shouldSwap = false;
      return;
    }
    if (target.id !== 'mcp-servers') return;
    const active = document.activeElement;
    kept = {
      ticked: Array.from(target.querySelectorAll('input[type=checkbox]:checked')).map((c) => c.name + '=' + c.value),
      focus: active && target.contains(active) ? focusKey(active) : null,
    };
  });

  // focusKey names a control so the same control can be found in the card's next rendering.
  function focusKey(el) {
    const server = el.closest('[data-server]');
    const tag = el.tagName.toLowerCase();
    const all = Array.from((server || document.getElementById('mcp-servers')).querySelectorAll(tag));
    return { server: server ? server.dataset.server : null, tag: tag, index: all.indexOf(el) };
  }

  function restoreCard(card) {
    restoring = true;
    card.querySelectorAll('[data-server]').forEach(function (server) {
      const choice = opened.get(server.dataset.server);
      const details = server.querySelector('details.server-details');
      if (choice && details && choice.state === server.dataset.state) details.open = choice.open;
    });
    card.querySelectorAll('details.pending-command').forEach(function (details) {
      const choice = opened.get('command:' + details.dataset.command);
      if (choice) details.open = choice.open;
    });
    // toggle events are queued: let them pass before listening again.
    setTimeout(function () { restoring = false; }, 0);
    if (!kept) return;
    card.querySelectorAll('input[type=checkbox]').forEach(function (c) {
      if (kept.ticked.indexOf(c.name + '=' + c.value) >= 0) c.checked = true;
    });
    if (kept.focus) {
      const f = kept.focus;
      const scope = f.server ? card.querySelector('[data-server="' + CSS.escape(f.server) + '"]') : card;
      const el = scope ? scope.querySelectorAll(f.tag)[f.index] : null;
      if (el) el.focus({ preventScroll: true });
    }
    kept = null;
  }

  // ---- focus and messages after an action ---------------------------------------------------

  let lastCard = null;

  document.addEventListener('htmx:afterSettle', function (event) {
    const d = event.detail || {};
    const card = document.getElementById('mcp-servers');
    if (card && card !== lastCard) {
      lastCard = card;
      restoreCard(card);
    }
    const cfg = d.requestConfig;
    if (!cfg || !cfg.elt || (cfg.verb || '').toLowerCase() !== 'post') return;
    // An action on a row: focus what it did (the row's message, or the note where it was).
    const target = cfg.elt.getAttribute('hx-target') || '';
    let place = null;
    const row = /^#tool-(\d+)$/.exec(target);
    if (row) place = document.getElementById('tool-' + row[1]) || document.getElementById('moved-' + row[1]);
    else if (target === '#tool-list') place = document.getElementById('batch-feedback');
    else if (target === '#mcp-servers') place = document.getElementById('mcp-servers');
    // A new recovery code, a secret set or deleted, a passkey renamed or removed, a test sent or
    // a browser removed from the notifications card: what it did.
    // A pending call approved or denied: what came of it.
    if (target === '#recovery' || target === '#secrets' || target === '#passkey-list' || target === '#push' ||
        /^#approval-\d+$/.test(target)) place = document.querySelector(target + ' [data-focus]');
    if (!place) return;
    if (place.matches('[data-focus]')) {
      place.focus();
      return;
    }
    // Phrases refused line by line, or limits refused: back to the first field at fault, which
    // names why.
    const invalid = place.querySelector('[aria-invalid="true"]');
    if (invalid) {
      invalid.focus();
      return;
    }
    const message = place.matches('.feedback') ? place
      : Array.from(place.querySelectorAll('.feedback')).find((m) => m.textContent.trim());
    if (message) message.focus();
    else {
      const next = place.querySelector('button, summary, a');
      if (next) next.focus();
    }
  });

  // The card's poll sends the new-tools notice every time: swap it only when it says something
  // new, so a screen reader hears it once, and only while the page shows the list the notice
  // compared with (a poll sent before the list was shown again answers for the old one).
  document.addEventListener('htmx:oobBeforeSwap', function (event) {
    const d = event.detail;
    if (!d || !d.target || d.target.id !== 'tools-news' || !d.fragment) return;
    const seen = document.getElementById('tools-seen');
    const said = d.fragment.querySelector && d.fragment.querySelector('[data-seen]');
    if (d.fragment.textContent.trim() === d.target.textContent.trim() ||
        (seen && said && said.getAttribute('data-seen') !== seen.value)) {
      d.shouldSwap = false;
    }
  });

  // ---- selecting rows for one approval ------------------------------------------------------

  function countSelected() {
    const bar = document.getElementById('tool-batch');
    const label = bar && bar.querySelector('[data-batch-count]');
    if (!label) return;
    const n = document.querySelectorAll('input.pick[form="tool-batch"]:checked').length;
    label.textContent = n === 0 ? 'Tick tools to enable several with one passkey confirmation.'
      : n === 1 ? '1 tool selected.' : n + ' tools selected.';
  }

  document.addEventListener('change', function (event) {
    const box = event.target;
    if (!(box instanceof HTMLInputElement) || box.type !== 'checkbox') return;
    if (box.dataset.action === 'pick-all') {
      document.querySelectorAll('input.pick[form="tool-batch"]').forEach(function (c) { c.checked = box.checked; });
    }
    countSelected();
  });

  // ---- buttons that need no passkey ---------------------------------------------------------

  document.addEventListener('click', function (event) {
    const button = event.target instanceof Element ? event.target.closest('button[data-action]') : null;
    if (!button) return;
    switch (button.dataset.action) {
      case 'show-news':
        if (window.htmx) window.htmx.trigger('#tool-list', 'maven:tools-changed');
        break;
      case 'copy-recovery':
        copyCode(button);
        break;
      case 'download-recovery':
        downloadCode(button);
        break;
    }
  });

  function recoveryCode(button) {
    const scope = button.closest('.recovery-code') || document;
    const code = scope.querySelector('[data-recovery-code]');
    return code ? code.textContent.trim() : '';
  }

  function tell(button, message) {
    const area = button.parentElement && button.parentElement.querySelector('.feedback');
    if (area) area.textContent = message;
  }

  async function copyCode(button) {
    const code = recoveryCode(button);
    try {
      await navigator.clipboard.writeText(code);
      tell(button, 'Copied. Paste it into your password manager now.');
    } catch (_) {
      // Without clipboard access, select it for the owner to copy by hand.
      const el = (button.closest('.recovery-code') || document).querySelector('[data-recovery-code]');
      if (el) window.getSelection().selectAllChildren(el);
      tell(button, 'Copying was not allowed here: the code is selected, copy it with your keyboard.');
    }
  }

  function downloadCode(button) {
    const text = 'Maven recovery code\n\n' + recoveryCode(button) + '\n\n' +
      'It unlocks Maven when no passkey can. Keep it somewhere safe, away from this machine.\n' +
      'Made on ' + location.host + ', ' + new Date().toISOString().slice(0, 10) + '.\n';
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = 'maven-recovery-code.txt';
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 0);
    tell(button, 'Downloaded as maven-recovery-code.txt. Move it somewhere safe.');
  }

  // ---- an address where passkeys cannot work ------------------------------------------------

  // The setup, sign-in and unlock pages carry the configured origins. A browser that reached
  // the page over plain HTTP at an address other than localhost is not in a secure context and
  // hides passkeys altogether; one at an origin Maven is not configured for would be refused
  // by the ceremony. Either way, say why and how to fix it before the owner presses the button.
  function checkOrigin() {
    const box = document.getElementById('origin-check');
    if (!box) return;
    let origins = [];
    try {
      origins = JSON.parse(box.dataset.origins || '[]');
    } catch (_) {
      origins = [];
    }
    let why = null;
    if (!window.isSecureContext) why = 'insecure';
    else if (origins.indexOf(location.origin) < 0) why = 'origin';
    if (!why) return;
    box.querySelectorAll('[data-why]').forEach(function (p) { p.hidden = p.dataset.why !== why; });
    box.querySelectorAll('[data-here]').forEach(function (el) { el.textContent = location.origin; });
    box.hidden = false;
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', checkOrigin);
  else checkOrigin();
})();
