/*
 * The console's "Try it" page (src/console/views/try.ts renders its markup, src/console/routes/try.ts serves this file): verifies two photos with a
 * REST key of the signed-in account, calling the gateway straight from the browser.
 *
 * Served as a static file (GET /assets/try-it.js) under the page's CSP: no inline script, no third
 * party. Why the browser calls the gateway itself, with a key it holds in this tab only, is written
 * in src/console/routes/try.ts.
 *
 * Boxes are positioned in percent of the image's natural size, so they follow the image at any
 * displayed size (390 px phone, 1280 px desktop, a resized window) without being redrawn.
 */
(function () {
  'use strict';

  var form = document.getElementById('try-form');
  if (!form) return;
  var GATEWAY = form.getAttribute('data-gateway').replace(/\/+$/, '');
  var CSRF = form.getAttribute('data-csrf');
  var KEY_STORE = 'facecompute.try-it.key';
  var KEY_PREFIX_LENGTH = 16;

  var $ = function (id) { return document.getElementById(id); };
  var keyInput = $('try-key');
  var statusEl = $('try-status');
  var modelSel = $('try-model');
  var detectorSel = $('try-detector');
  var allFaces = $('try-all-faces');
  var capabilities = null;

  function say(text, kind) {
    statusEl.textContent = text;
    statusEl.className = 'try-status' + (kind ? ' ' + kind : '');
  }

  // ---- the key: this tab only -------------------------------------------------------------------

  try {
    var kept = sessionStorage.getItem(KEY_STORE);
    if (kept) keyInput.value = kept;
  } catch (e) { /* storage refused (private mode): the key is typed each time */ }

  // Signing out from this page forgets the key too (a key pasted by someone else is refused anyway:
  // checkKey accepts only the signed-in account's keys).
  var signout = document.querySelector('form.signout');
  if (signout) signout.addEventListener('submit', function () {
    try { sessionStorage.removeItem(KEY_STORE); } catch (e) { /* see above */ }
  });

  keyInput.addEventListener('change', function () {
    try { sessionStorage.setItem(KEY_STORE, keyInput.value.trim()); } catch (e) { /* see above */ }
  });

  $('try-new-key').addEventListener('click', function () {
    say('Creating a key named "try-it"…');
    fetch('/api/keys', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': CSRF },
      body: JSON.stringify({ name: 'try-it' }),
    }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.detail || 'the key could not be created');
        keyInput.value = body.key;
        try { sessionStorage.setItem(KEY_STORE, body.key); } catch (e) { /* see above */ }
        say('Created the key "try-it" (' + body.prefix + '…). It is kept in this tab only; revoke it on the API keys page when done.', 'ok');
      });
    }).catch(function (err) { say(sentence(err.message), 'error'); });
  });

  /** The key must be an active REST key of this account: another account's key would spend its calls. */
  function checkKey(key) {
    if (!/^fc_live_[A-Za-z0-9_-]{20,}$/.test(key)) return Promise.reject(new Error('paste a REST key (fc_live_…) of this account, or create one for this page'));
    return fetch('/api/keys', { credentials: 'same-origin' }).then(function (r) {
      if (!r.ok) throw new Error('your session has ended; sign in again');
      return r.json();
    }).then(function (list) {
      var prefix = key.slice(0, KEY_PREFIX_LENGTH);
      var mine = list.keys.some(function (k) { return k.prefix === prefix && !k.revoked_at; });
      if (!mine) throw new Error('this key is not an active REST key of this account');
    });
  }

  // ---- capabilities: models, detectors, calibration --------------------------------------------------

  function fill(select, names, preferred) {
    select.textContent = '';
    names.forEach(function (n) {
      var o = document.createElement('option');
      o.value = n; o.textContent = n;
      if (n === preferred) o.selected = true;
      select.appendChild(o);
    });
  }

  fetch(GATEWAY + '/capabilities').then(function (r) {
    if (!r.ok) throw new Error('the API answered ' + r.status);
    return r.json();
  }).then(function (caps) {
    capabilities = caps;
    fill(modelSel, caps.allowed_models, caps.default_model);
    fill(detectorSel, caps.allowed_detectors, caps.default_detector);
    $('try-run').disabled = false;
    form.setAttribute('data-ready', 'true');
  }).catch(function (err) {
    say('The API at ' + GATEWAY + ' cannot be reached (' + err.message + '); the page needs it to list models and detectors.', 'error');
  });

  // ---- the photos ----------------------------------------------------------------------------------

  var SAMPLE_PAIRS = { same: ['img1.jpg', 'img2.jpg'], different: ['img1.jpg', 'img3.jpg'] };

  function source() {
    var checked = form.querySelector('input[name="source"]:checked');
    return checked ? checked.value : 'same';
  }
  function syncSource() {
    $('try-uploads').hidden = source() !== 'upload';
  }
  Array.prototype.forEach.call(form.querySelectorAll('input[name="source"]'), function (r) { r.addEventListener('change', syncSource); });
  syncSource();

  /** The two photos as {name, blob}, from the shipped samples or the file inputs. */
  function photos() {
    if (source() === 'upload') {
      var files = [$('try-img1').files[0], $('try-img2').files[0]];
      if (!files[0] || !files[1]) return Promise.reject(new Error('choose two photos'));
      var max = capabilities && capabilities.limits && capabilities.limits.max_image_bytes;
      for (var i = 0; i < 2; i++) {
        if (max && files[i].size > max) return Promise.reject(new Error(files[i].name + ' is larger than the API accepts (' + max + ' bytes)'));
      }
      return Promise.resolve(files.map(function (f) { return { name: f.name, blob: f }; }));
    }
    var pair = SAMPLE_PAIRS[source()];
    return Promise.all(pair.map(function (name) {
      return fetch('/samples/' + name).then(function (r) {
        if (!r.ok) throw new Error('sample ' + name + ' is missing');
        return r.blob();
      }).then(function (blob) { return { name: name, blob: blob }; });
    }));
  }

  // ---- calling the API ---------------------------------------------------------------------------------

  function call(path, key, body) {
    return fetch(GATEWAY + path, { method: 'POST', headers: { authorization: 'Bearer ' + key }, body: body, credentials: 'omit' }).then(function (r) {
      return r.json().then(function (json) {
        return { path: path, status: r.status, requestId: r.headers.get('x-request-id'), json: json };
      }, function () {
        return { path: path, status: r.status, requestId: r.headers.get('x-request-id'), json: { error: 'invalid_response', detail: 'the API answered ' + r.status + ' without JSON' } };
      });
    });
  }

  function options() {
    return { model_name: modelSel.value, detector_backend: detectorSel.value };
  }

  /** The two photos as `fields` (two names, or one name twice) with the chosen model and detector. */
  function photosForm(fields, p) {
    var fd = new FormData();
    fd.append(fields[0], p[0].blob, p[0].name);
    fd.append(fields[1], p[1].blob, p[1].name);
    var o = options();
    Object.keys(o).forEach(function (k) { fd.append(k, o[k]); });
    return fd;
  }

  function verifyForm(p) {
    return photosForm(['img1', 'img2'], p);
  }

  /** One /represent of both photos (one call): every face the detector finds, not only the pair used. */
  function representForm(p) {
    return photosForm(['img', 'img'], p);
  }

  function sentence(text) {
    text = String(text || '');
    return text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.');
  }

  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var key = keyInput.value.trim();
    var run = $('try-run');
    run.disabled = true;
    $('try-result').removeAttribute('data-drawn');
    say('Checking the key…');
    var shown, before = null;
    checkKey(key).then(function () {
      return remaining().then(function (n) { before = n; });
    }).then(function () {
      try { sessionStorage.setItem(KEY_STORE, key); } catch (e) { /* see above */ }
      return photos();
    }).then(function (p) {
      shown = p;
      say('Verifying…');
      return call('/verify', key, verifyForm(p));
    }).then(function (verify) {
      // Every face only once the decision came: a refused or failed /verify spends no second call.
      if (verify.status !== 200 || !allFaces.checked) return [verify];
      say('Finding every face…');
      return call('/represent', key, representForm(shown)).then(function (represent) { return [verify, represent]; });
    }).then(function (answers) {
      return render(shown, answers[0], answers[1] || null).then(remaining).then(function (left) { showRemaining(before, left); });
    }).catch(function (err) {
      say(sentence(err.message), 'error');
    }).then(function () {
      run.disabled = false;
      // How many runs have finished, answered or not (the browser test waits on it).
      form.setAttribute('data-runs', String(Number(form.getAttribute('data-runs') || 0) + 1));
    });
  });

  // ---- the answer -------------------------------------------------------------------------------------

  function sameBox(a, b) {
    return a && b && a.x === b.x && a.y === b.y && a.w === b.w && a.h === b.h;
  }

  var pct = function (v, whole) { return (100 * v / whole).toFixed(4) + '%'; };

  /** One image with its faces: `used` is the face /verify decided on. */
  function drawFaces(index, photo, faces, used) {
    var img = $('try-view' + index);
    var layer = $('try-boxes' + index);
    layer.textContent = '';
    $('try-name' + index).textContent = photo.name;
    return new Promise(function (done, fail) {
      var reader = new FileReader();
      reader.onload = function () { img.src = reader.result; };
      reader.onerror = function () { fail(new Error('the photo could not be shown')); };
      img.onload = function () {
        var W = img.naturalWidth, H = img.naturalHeight;
        var list = faces.slice();
        // The used face is drawn even when /represent was not asked or boxed it otherwise.
        if (used && !list.some(function (f) { return sameBox(f, used); })) list.push(used);
        list.forEach(function (f, i) {
          var isUsed = sameBox(f, used);
          var box = document.createElement('div');
          box.className = 'face-box' + (isUsed ? ' used' : '');
          box.setAttribute('data-face', String(i));
          box.setAttribute('data-x', String(f.x)); box.setAttribute('data-y', String(f.y));
          box.setAttribute('data-w', String(f.w)); box.setAttribute('data-h', String(f.h));
          box.style.left = pct(f.x, W); box.style.top = pct(f.y, H);
          box.style.width = pct(f.w, W); box.style.height = pct(f.h, H);
          box.title = (isUsed ? 'Face used for the decision' : 'Face found') + ': x ' + f.x + ', y ' + f.y + ', ' + f.w + '×' + f.h;
          layer.appendChild(box);
          [['left_eye', 'Left eye'], ['right_eye', 'Right eye']].forEach(function (e) {
            var p = f[e[0]];
            if (!Array.isArray(p)) return;
            var dot = document.createElement('div');
            dot.className = 'eye' + (isUsed ? ' used' : '');
            dot.setAttribute('data-eye', e[0]);
            dot.title = e[1] + ' (' + p[0] + ', ' + p[1] + ')';
            dot.style.left = pct(p[0], W); dot.style.top = pct(p[1], H);
            layer.appendChild(dot);
          });
        });
        $('try-count' + index).textContent = list.length + (list.length === 1 ? ' face' : ' faces') + (faces.length === 0 && used ? ' (the one used; /represent was not asked)' : '');
        done();
      };
      reader.readAsDataURL(photo.blob);
    });
  }

  /** Distance, threshold and the calibrated thresholds on one scale. */
  function drawScale(v) {
    var cal = capabilities && capabilities.calibration && capabilities.calibration.models;
    var c = cal && cal[v.model] && cal[v.model][v.detector_backend] && cal[v.model][v.detector_backend][v.similarity_metric];
    var marks = [{ id: 'distance', label: 'Distance', value: v.distance }, { id: 'threshold', label: 'Threshold used', value: v.threshold }];
    if (c) {
      marks.push({ id: 'deepface', label: "DeepFace's threshold", value: c.deepface.threshold });
      marks.push({ id: 'far-1e-2', label: 'Calibrated, FAR 1e-2', value: c.far_1e_2.threshold, tar: c.far_1e_2.tar });
      marks.push({ id: 'far-1e-3', label: 'Calibrated, FAR 1e-3', value: c.far_1e_3.threshold, tar: c.far_1e_3.tar });
    }
    var top = Math.max.apply(null, marks.map(function (m) { return m.value; })) * 1.2 || 1;
    var track = $('try-scale-track');
    track.textContent = '';
    var accept = document.createElement('div');
    accept.className = 'accept';
    accept.style.width = pct(Math.min(v.threshold, top), top);
    track.appendChild(accept);
    var legend = $('try-scale-legend');
    legend.textContent = '';
    marks.forEach(function (m) {
      var tick = document.createElement('div');
      tick.className = 'tick ' + m.id;
      tick.style.left = pct(Math.min(m.value, top), top);
      tick.title = m.label + ': ' + m.value.toFixed(4);
      track.appendChild(tick);
      var dt = document.createElement('dt');
      var sw = document.createElement('span');
      sw.className = 'swatch tick-' + m.id;
      dt.appendChild(sw);
      dt.appendChild(document.createTextNode(m.label));
      var dd = document.createElement('dd');
      dd.setAttribute('data-mark', m.id);
      dd.textContent = m.value.toFixed(4);
      if (m.tar !== undefined) {
        var tar = document.createElement('span');
        tar.className = 'muted tar';
        tar.textContent = ' accepts ' + (100 * m.tar).toFixed(1) + '% of same-person pairs';
        dd.appendChild(tar);
      }
      legend.appendChild(dt);
      legend.appendChild(dd);
    });
    $('try-scale-note').textContent = c
      ? 'Calibrated on ' + capabilities.calibration.dataset + ' for ' + v.model + ', ' + v.detector_backend + ', ' + v.similarity_metric + '. Send one as threshold in a request to decide at that false-accept rate.'
      : 'No calibration is published for ' + v.model + ' with ' + v.detector_backend + '.';
  }

  function shellQuote(s) {
    return /^[A-Za-z0-9._\/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function curlCommand(p) {
    var o = options();
    return 'curl -sS ' + GATEWAY + '/verify \\\n' +
      '  -H "Authorization: Bearer $FACECOMPUTE_API_KEY" \\\n' +
      '  -F img1=@' + shellQuote(p[0].name) + ' -F img2=@' + shellQuote(p[1].name) + ' \\\n' +
      '  -F model_name=' + shellQuote(o.model_name) + ' -F detector_backend=' + shellQuote(o.detector_backend);
  }

  function render(p, verify, represent) {
    var result = $('try-result');
    result.hidden = false;
    $('try-curl').textContent = curlCommand(p);
    $('try-json').textContent = JSON.stringify(verify.json, null, 2);
    $('try-represent-json').textContent = represent ? JSON.stringify(represent.json, null, 2) : '/represent was not asked.';
    $('try-request-ids').textContent = [verify].concat(represent ? [represent] : []).map(function (a) { return a.path + ' ' + a.requestId; }).join(', ');
    result.setAttribute('data-verify-request-id', verify.requestId || '');
    if (represent) result.setAttribute('data-represent-request-id', represent.requestId || '');
    var verdict = $('try-verdict');
    if (verify.status !== 200) {
      verdict.className = 'verdict error';
      verdict.textContent = 'The API answered ' + verify.status + ' ' + verify.json.error + ': ' + sentence(verify.json.detail);
      $('try-answer').hidden = true;
      say('');
      return Promise.resolve();
    }
    var v = verify.json;
    verdict.className = 'verdict ' + (v.verified ? 'same' : 'different');
    verdict.textContent = (v.verified ? 'Same person' : 'Different people') + ': distance ' + v.distance.toFixed(4) + (v.verified ? ' ≤ ' : ' > ') + 'threshold ' + v.threshold.toFixed(4) + ' (' + v.model + ', ' + v.detector_backend + ', ' + v.similarity_metric + ').';
    $('try-answer').hidden = false;
    if (represent && represent.status !== 200) say('The faces of /represent are missing: ' + represent.json.error + '.', 'error');
    else say('');
    var faces = represent && represent.status === 200 ? represent.json.results.map(function (r) { return r.map(function (x) { return x.facial_area; }); }) : [[], []];
    drawScale(v);
    return Promise.all([drawFaces(1, p[0], faces[0], v.facial_areas.img1), drawFaces(2, p[1], faces[1], v.facial_areas.img2)]).then(function () {
      result.setAttribute('data-drawn', 'true');
    });
  }

  /** The account's free calls left (its own figure, read from the console before and after a run). */
  function remaining() {
    return fetch('/api/account', { credentials: 'same-origin' }).then(function (r) { return r.ok ? r.json() : null; }).then(function (body) {
      return body ? body.account.free_calls.remaining : null;
    });
  }

  function showRemaining(before, left) {
    var el = $('try-remaining');
    if (left === null) { el.textContent = ''; return; }
    var spent = before === null ? null : before - left;
    el.textContent = (spent === null ? '' : 'This run spent ' + spent + (spent === 1 ? ' call' : ' calls') + '; ') + left + ' free ' + (left === 1 ? 'call remains' : 'calls remain') + ' on this account.';
    el.setAttribute('data-remaining', String(left));
    if (spent !== null) el.setAttribute('data-spent', String(spent));
  }
})();
