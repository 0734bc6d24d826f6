// Maven's browser glue: the WebAuthn ceremonies (register, sign in, step-up, unlock, and the PRF
// enrollment that lets a passkey unlock) and the step-up prompt that htmx raises. The Content-Security-Policy forbids inline script and eval, so all of
// the page's behaviour lives here, loaded with <script defer>; htmx is configured by the
// <meta name="htmx-config"> in the layout.
(function () {
  'use strict';

  // ---- base64url ---------------------------------------------------------------------------

  function toB64u(buf) {
    const bytes = buf instanceof ArrayBuffer ? new Uint8Array(buf)
      : new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    let s = '';
    for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  function fromB64u(str) {
    const s = str.replace(/-/g, '+').replace(/_/g, '/');
    const bin = atob(s + '='.repeat((4 - (s.length % 4)) % 4));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  // ---- options from the server, credentials back to it --------------------------------------

  function withIds(list) {
    return (list || []).map((c) => Object.assign({}, c, { id: fromB64u(c.id) }));
  }

  function creationOptions(server) {
    const pk = Object.assign({}, server.publicKey);
    pk.challenge = fromB64u(pk.challenge);
    pk.user = Object.assign({}, pk.user, { id: fromB64u(pk.user.id) });
    pk.excludeCredentials = withIds(pk.excludeCredentials);
    return pk;
  }

  // PRF inputs arrive base64url-encoded; the browser wants bytes.
  function prfValues(v) {
    const out = { first: fromB64u(v.first) };
    if (v.second) out.second = fromB64u(v.second);
    return out;
  }

  function requestExtensions(ext) {
    if (!ext || !ext.prf) return ext;
    const prf = Object.assign({}, ext.prf);
    if (prf.eval) prf.eval = prfValues(prf.eval);
    if (prf.evalByCredential) {
      const byCred = {};
      for (const id of Object.keys(prf.evalByCredential)) byCred[id] = prfValues(prf.evalByCredential[id]);
      prf.evalByCredential = byCred;
    }
    return Object.assign({}, ext, { prf: prf });
  }

  function requestOptions(server) {
    const pk = Object.assign({}, server.publicKey);
    pk.challenge = fromB64u(pk.challenge);
    pk.allowCredentials = withIds(pk.allowCredentials);
    if (pk.extensions) pk.extensions = requestExtensions(pk.extensions);
    return pk;
  }

  // Binary values (PRF outputs, if any) become base64url; nothing here is ever logged.
  function jsonable(v) {
    if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return toB64u(v);
    if (Array.isArray(v)) return v.map(jsonable);
    if (v && typeof v === 'object') {
      const o = {};
      for (const k of Object.keys(v)) o[k] = jsonable(v[k]);
      return o;
    }
    return v;
  }

  function extensionResults(cred) {
    return jsonable(cred.getClientExtensionResults ? cred.getClientExtensionResults() : {});
  }

  function attestationJSON(cred) {
    const r = cred.response;
    return {
      id: cred.id,
      rawId: toB64u(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      response: {
        clientDataJSON: toB64u(r.clientDataJSON),
        attestationObject: toB64u(r.attestationObject),
        transports: r.getTransports ? r.getTransports() : [],
      },
      clientExtensionResults: extensionResults(cred),
    };
  }

  function assertionJSON(cred) {
    const r = cred.response;
    return {
      id: cred.id,
      rawId: toB64u(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      response: {
        clientDataJSON: toB64u(r.clientDataJSON),
        authenticatorData: toB64u(r.authenticatorData),
        signature: toB64u(r.signature),
        userHandle: r.userHandle ? toB64u(r.userHandle) : undefined,
      },
      clientExtensionResults: extensionResults(cred),
    };
  }

  // ---- talking to Maven ----------------------------------------------------------------------

  // Failure carries a message written for the owner (the server's, or one of ours).
  class Failure extends Error {}

  async function post(url, body) {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body || {}),
    });
    let data = {};
    try {
      data = await res.json();
    } catch (_) {
      data = {};
    }
    if (res.status === 401 && data.redirect) {
      window.location.assign(data.redirect);
      throw new Failure('Your session ended. Please sign in again.');
    }
    if (res.status === 423 && data.redirect) {
      window.location.assign(data.redirect);
      throw new Failure('Maven is locked. Unlock it first.');
    }
    return { ok: res.ok, status: res.status, data: data };
  }

  function failure(res) {
    return new Failure(res.data.error || 'Maven answered ' + res.status + '. Please try again.');
  }

  function friendly(err) {
    if (err instanceof Failure) return err.message;
    switch (err && err.name) {
      case 'NotAllowedError':
        return 'The passkey prompt was cancelled, timed out, or could not verify you.';
      case 'InvalidStateError':
        return 'This authenticator already holds a passkey for Maven.';
      case 'SecurityError':
        return 'The browser refused: this address is not one of Maven’s configured origins.';
      case 'NotSupportedError':
        return 'This browser or authenticator cannot use a passkey here.';
    }
    return 'The passkey step failed. Please try again.';
  }

  // say shows a message beside elt (in the .feedback of its row, bar or card section), where the
  // owner is looking, and in the page's status area when elt has none.
  function say(elt, message, kind) {
    const scope = elt instanceof Element ? elt.closest('.actions, .batch-bar, .pending-command, form, .card, section') : null;
    const area = scope ? scope.querySelector('.feedback') : null;
    if (!area) {
      flash(message, kind);
      return;
    }
    area.textContent = message || '';
    area.dataset.kind = kind || 'info';
  }

  function flash(message, kind) {
    const area = document.getElementById('flash');
    if (!area) return;
    area.replaceChildren();
    if (!message) return;
    const p = document.createElement('p');
    p.className = 'flash ' + (kind || 'info');
    p.textContent = message;
    area.appendChild(p);
  }

  function requirePasskeys() {
    if (!window.isSecureContext) {
      // Browsers hide WebAuthn outside a secure context: the real cause is the address.
      throw new Failure('Passkeys work only over HTTPS, or over plain HTTP at localhost, and this page is ' +
        location.origin + '. The box above says how to reach Maven so that they work.');
    }
    if (!window.PublicKeyCredential || !navigator.credentials) {
      throw new Failure('This browser does not support passkeys.');
    }
  }

  // ---- ceremonies ----------------------------------------------------------------------------

  // Registration asks for PRF support (the vault unlocks with it). Some authenticators fail
  // outright when PRF is requested; then try once more without it: that passkey signs in but
  // cannot unlock. The server's ceremony is the same for both attempts.
  async function createCredential(serverOptions) {
    const pk = creationOptions(serverOptions);
    try {
      return await navigator.credentials.create({ publicKey: pk });
    } catch (err) {
      const askedPRF = pk.extensions && pk.extensions.prf;
      if (!askedPRF || err.name === 'InvalidStateError' || err.name === 'AbortError') throw err;
      const extensions = Object.assign({}, pk.extensions);
      delete extensions.prf;
      return await navigator.credentials.create({ publicKey: Object.assign({}, pk, { extensions: extensions }) });
    }
  }

  function passkeyName() {
    const input = document.getElementById('passkey-name');
    return input ? input.value : '';
  }

  async function register(beginURL, finishURL, beginBody) {
    requirePasskeys();
    const begin = await withStepUp(() => post(beginURL, beginBody));
    if (!begin.ok) throw failure(begin);
    const cred = await createCredential(begin.data.options);
    const finish = await post(finishURL, { name: passkeyName(), credential: attestationJSON(cred) });
    if (!finish.ok) throw failure(finish);
    return finish.data;
  }

  // assert runs one assertion ceremony: begin, the passkey gesture, finish. Maven may send a
  // prompt with the options, saying what the gesture is for; it is shown during the gesture.
  async function assert(beginURL, finishURL, beginBody, where) {
    requirePasskeys();
    const begin = await post(beginURL, beginBody);
    if (!begin.ok) throw failure(begin);
    if (begin.data.prompt) say(where, begin.data.prompt, 'info');
    const cred = await navigator.credentials.get({ publicKey: requestOptions(begin.data.options) });
    const finish = await post(finishURL, { credential: assertionJSON(cred) });
    if (!finish.ok) throw failure(finish);
    return finish.data;
  }

  const login = () => assert('/login/begin', '/login/finish');

  // unlock signs in and unlocks with one assertion that also evaluates the passkey's PRF. The
  // answer says whether it unlocked, or that this passkey can sign in but not unlock.
  const unlock = () => assert('/unlock/begin', '/unlock/finish');

  // enroll lets passkey id unlock: an assertion by that passkey alone evaluates its PRF, and
  // Maven wraps its vault key with the result (making the vault, and a recovery code, if there
  // is none yet). Registration rarely returns a PRF result itself, hence this second gesture.
  const enroll = (id) => assert('/passkeys/' + encodeURIComponent(id) + '/enroll/begin', '/passkeys/enroll/finish');

  // afterRegistration enrolls a passkey that reported PRF support. It returns true when it
  // took over the page to show the new vault's recovery code, which the owner must
  // acknowledge before going on to next.
  async function afterRegistration(done, next) {
    if (!done.prf) return false;
    flash('Confirm once more with the same passkey, so it can unlock Maven.', 'info');
    let res;
    try {
      res = await enroll(done.id);
    } catch (err) {
      showNotice('The passkey was registered, but it could not be set up to unlock Maven: ' +
        friendly(err) + ' You can try again with “Let it unlock” on the Passkeys page.', next);
      return true;
    }
    flash('');
    if (res.recovery_code) {
      showRecoveryCode(res.recovery_code, next);
      return true;
    }
    return false;
  }

  function element(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    if (text) e.textContent = text;
    return e;
  }

  // showRecoveryCode replaces the page with the vault's new recovery code, shown this once, with
  // Copy and Download beside it (pages.js), and moves focus to its heading so a screen reader
  // starts there.
  function showRecoveryCode(code, next) {
    const main = document.querySelector('main');
    const section = element('section', { id: 'recovery-code', class: 'narrow card recovery-code', 'aria-labelledby': 'recovery-heading' });
    const heading = element('h1', { id: 'recovery-heading', tabindex: '-1' }, 'Save your recovery code');
    section.appendChild(heading);
    section.appendChild(element('p', {}, 'Maven made a vault for its secrets, and this passkey unlocks it. ' +
      'The recovery code below unlocks it when no passkey can. Keep it in a password manager or ' +
      'write it down now: it is shown this once.'));
    const p = element('p', { class: 'code' });
    // It wraps only between its groups, at the hyphens.
    const c = element('code', { 'data-recovery-code': '' });
    code.split('-').forEach(function (group, i) {
      if (i > 0) {
        c.append('-');
        c.appendChild(document.createElement('wbr'));
      }
      c.append(group);
    });
    p.appendChild(c);
    section.appendChild(p);
    const tools = element('p', { class: 'actions' });
    tools.appendChild(element('button', { type: 'button', 'data-action': 'copy-recovery' }, 'Copy'));
    tools.appendChild(element('button', { type: 'button', 'data-action': 'download-recovery' }, 'Download'));
    tools.appendChild(element('span', { class: 'feedback', role: 'status' }));
    section.appendChild(tools);
    const ack = element('p');
    ack.appendChild(element('button', { type: 'button', class: 'primary', 'data-action': 'ack-recovery', 'data-next': next }, 'I have saved it'));
    section.appendChild(ack);
    main.replaceChildren(section);
    flash('');
    heading.focus();
  }

  // showNotice replaces the page with a message and a way on.
  function showNotice(message, next) {
    const main = document.querySelector('main');
    const section = element('section', { class: 'narrow card' });
    section.appendChild(element('p', { class: 'warning' }, message));
    const p = element('p');
    p.appendChild(element('a', { href: next }, 'Continue'));
    section.appendChild(p);
    main.replaceChildren(section);
    flash('');
  }

  // stepUp proves, with a user-verified assertion, that the owner wants exactly what approval
  // names right now: an action and its items, each with the fingerprint this page showed
  // ({action, items: [{id, fingerprint}]}, as Maven's 403 sent it). Only those two keys are
  // sent: htmx adds its own to an event's detail.
  async function stepUp(approval, where) {
    await assert('/step-up/begin', '/step-up/finish', { action: approval.action, items: approval.items }, where);
    say(where, '');
  }

  // One passkey ceremony at a time: while one runs, the page's polls hold back (so nothing
  // swaps the button it started from) and a second click starts nothing.
  async function ceremony(run) {
    const root = document.documentElement;
    if (root.dataset.ceremony) throw new Failure('Finish the passkey prompt that is already open first.');
    root.dataset.ceremony = '1';
    try {
      return await run();
    } finally {
      delete root.dataset.ceremony;
    }
  }

  // withStepUp runs request; if Maven answers that it needs a fresh step-up, it performs one and
  // runs request once more.
  async function withStepUp(request) {
    let res = await request();
    if (res.status === 403 && res.data.step_up) {
      await stepUp(res.data.step_up, null);
      res = await request();
    }
    return res;
  }

  // ---- wiring --------------------------------------------------------------------------------

  // An htmx action that needs a step-up (Enable, Remove) gets a 403 whose HX-Trigger header
  // raises this event on the element that asked. Do the step-up, then ask again once. The
  // ceremony holds until the second answer is in: htmx sends nothing from an element no longer
  // in the page, so a poll of the servers card that swapped the form away between the passkey
  // and the retry would drop the owner's click without a word.
  document.addEventListener('maven:step-up', async function (event) {
    const elt = event.target;
    const detail = event.detail || {};
    if (!(elt instanceof Element) || !window.htmx) return;
    if (elt.dataset.stepUpRetry === '1') {
      say(elt, 'Maven asked for your passkey again. Please try once more.', 'error');
      return;
    }
    const buttons = elt.matches('form') ? Array.from(elt.querySelectorAll('button')) : [elt];
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await ceremony(async () => {
        await stepUp(detail, elt);
        buttons.forEach((b) => { b.disabled = false; });
        elt.dataset.stepUpRetry = '1';
        await window.htmx.ajax('POST', elt.getAttribute('hx-post'), {
          source: elt,
          target: elt.getAttribute('hx-target') || elt,
          swap: elt.getAttribute('hx-swap') || 'outerHTML',
        });
      });
    } catch (err) {
      say(elt, friendly(err), 'error');
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
      delete elt.dataset.stepUpRetry;
    }
  });

  // A new action clears the last message; a poll (the servers card, the pending calls' list
  // and status) does not.
  document.addEventListener('htmx:beforeRequest', function (event) {
    const elt = event.detail && event.detail.elt;
    if (elt instanceof Element && elt.id !== 'mcp-servers' && !elt.hasAttribute('data-live')) {
      flash('');
      if (!elt.dataset.stepUpRetry) say(elt, '');
    }
  });

  document.addEventListener('htmx:sendError', function () {
    flash('Maven cannot be reached. Is it still running?', 'error');
  });

  // The buttons that run a passkey ceremony, by their data-action.
  const ceremonies = new Set(['register', 'unlock', 'enroll', 'ack-recovery', 'login', 'add-passkey']);

  document.addEventListener('click', async function (event) {
    const button = event.target instanceof Element ? event.target.closest('button[data-action]') : null;
    if (!button || button.disabled) return;
    if (!ceremonies.has(button.dataset.action)) return;
    event.preventDefault();
    button.disabled = true;
    try {
      await ceremony(() => runAction(button));
    } catch (err) {
      say(button, friendly(err), 'error');
    } finally {
      button.disabled = false;
    }
  });

  // nextOf is where a page asked to come back to once its button's ceremony is done (the
  // consent page, after a sign-in or an unlock): a path of Maven's own, never another site.
  function nextOf(button) {
    const next = button.dataset.next || '';
    return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '';
  }

  async function runAction(button) {
    switch (button.dataset.action) {
      case 'register': {
        flash('Follow your device’s prompt to create the passkey.', 'info');
        const done = await register('/setup/begin', '/setup/finish', { token: button.dataset.token || '' });
        const next = done.redirect || '/tools';
        if (!(await afterRegistration(done, next))) window.location.assign(next);
        break;
      }
      case 'unlock': {
        const done = await unlock();
        if (done.ok) {
          window.location.assign(nextOf(button) || done.redirect || '/tools');
          break;
        }
        const note = document.getElementById('no-prf');
        if (note) note.hidden = false;
        else flash(done.error || 'This passkey cannot unlock Maven.', 'error');
        const recovery = document.getElementById('recovery');
        if (recovery) recovery.open = true;
        const input = document.getElementById('recovery-code');
        if (input) input.focus();
        break;
      }
      case 'enroll': {
        const res = await enroll(button.dataset.passkeyId);
        if (res.recovery_code) {
          showRecoveryCode(res.recovery_code, '/passkeys');
          break;
        }
        await window.htmx.ajax('GET', '/passkeys', { target: '#passkey-list', swap: 'outerHTML' });
        flash('This passkey can now unlock Maven.', 'info');
        break;
      }
      case 'ack-recovery': {
        window.location.assign(button.dataset.next || '/tools');
        break;
      }
      case 'login': {
        const done = await login();
        window.location.assign(nextOf(button) || done.redirect || '/tools');
        break;
      }
      case 'add-passkey': {
        const done = await register('/passkeys/add/begin', '/passkeys/add/finish', {});
        if (await afterRegistration(done, '/passkeys')) break;
        const input = document.getElementById('passkey-name');
        if (input) input.value = '';
        await window.htmx.ajax('GET', '/passkeys', { target: '#passkey-list', swap: 'outerHTML' });
        flash('Passkey added.', 'info');
        break;
      }
    }
  }
})();
