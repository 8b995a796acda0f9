// Agent Desk: the one small script of our own. It connects the page to Socket.IO with the sign-in
// session and turns every domain event into a DOM event on <body> ("desk:<event type>", detail = the
// event), so fragments refresh themselves with hx-trigger="desk:message.created from:body" and scripts
// can listen. A reconnect (server restart, dropped network) fires "desk:reconnected" so the visible
// fragments fetch what they missed. A background tab keeps its connection: presence does not flap.

// Controls that act when changed (the language menu): no inline handlers anywhere, because the
// Content-Security-Policy runs only scripts from our own files. This part runs on every page, the
// sign-in page included, before the live part below decides whether there is a desk to connect.
document.addEventListener("change", function (evt) {
  const control = evt.target.closest ? evt.target.closest("[data-autosubmit]") : null;
  if (control && control.form) {
    control.form.requestSubmit();
  }
});

// Alerts close by themselves (data-autoclose, in ms: a refusal stays longer than a confirmation), and
// wait while the pointer or the keyboard focus is on them, so nobody loses one they are reading.
(function () {
  "use strict";

  function closeLater(alert) {
    if (alert.dataset.closing) {
      return;
    }
    alert.dataset.closing = "1";
    let left = parseInt(alert.dataset.autoclose, 10) || 6000;
    let started = Date.now();
    let timer = null;
    function close() {
      if (window.bootstrap && window.bootstrap.Alert) {
        window.bootstrap.Alert.getOrCreateInstance(alert).close();
      } else {
        alert.remove();
      }
    }
    function run() {
      started = Date.now();
      timer = window.setTimeout(close, left);
    }
    function hold() {
      if (timer !== null) {
        window.clearTimeout(timer);
        timer = null;
        left = Math.max(1500, left - (Date.now() - started));
      }
    }
    alert.addEventListener("mouseenter", hold);
    alert.addEventListener("focusin", hold);
    alert.addEventListener("mouseleave", run);
    alert.addEventListener("focusout", run);
    run();
  }

  function watch(root) {
    (root.querySelectorAll ? root.querySelectorAll("[data-autoclose]") : []).forEach(closeLater);
  }

  document.addEventListener("DOMContentLoaded", function () {
    watch(document);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        change.addedNodes.forEach(function (node) {
          if (node.nodeType === 1) {
            if (node.matches("[data-autoclose]")) {
              closeLater(node);
            }
            watch(node);
          }
        });
      });
    }).observe(document.body, { childList: true, subtree: true });
  });
})();

(function () {
  "use strict";

  const body = document.body;
  const environment = body.dataset.environment;
  if (!environment || typeof io === "undefined") {
    return;
  }

  const socket = io({
    path: "/socket.io",
    auth: { desk: environment },
    transports: ["websocket", "polling"],
  });
  let connectedBefore = false;

  function emitToPage(name, detail) {
    body.dispatchEvent(new CustomEvent(name, { detail: detail, bubbles: true }));
  }

  socket.on("connect", function () {
    body.dataset.live = "on";
    if (connectedBefore) {
      emitToPage("desk:reconnected", {});
    }
    connectedBefore = true;
    emitToPage("desk:connected", {});
  });

  socket.on("disconnect", function () {
    body.dataset.live = "off";
  });

  socket.onAny(function (name, event) {
    if (event && typeof event === "object" && event.type) {
      emitToPage("desk:" + event.type, event);
    }
  });

  // Presence dots: any element with data-presence-member="<member id>" follows that member's status.
  body.addEventListener("desk:presence.updated", function (evt) {
    const data = evt.detail.data || {};
    document.querySelectorAll('[data-presence-member="' + CSS.escape(String(data.member_id)) + '"]')
      .forEach(function (dot) {
        dot.dataset.status = data.status;
        const label = dot.dataset["label" + String(data.status).charAt(0).toUpperCase() + String(data.status).slice(1)];
        if (label) {
          dot.setAttribute("title", label);
          dot.setAttribute("aria-label", label);
        }
      });
  });

  function joinConversation(conversationId) {
    return new Promise(function (resolve) {
      socket.emit("join_conversation", { conversation_id: conversationId }, resolve);
    });
  }

  window.agentDesk = { socket: socket, joinConversation: joinConversation };

  // Teammates menu: how many are online, kept true as their dots change.
  body.addEventListener("desk:presence.updated", function () {
    const count = document.querySelector("#teammates [data-online-count]");
    if (count) {
      const online = document.querySelectorAll('#teammates [data-teammate] [data-status="online"]').length;
      count.textContent = online;
      count.classList.toggle("text-bg-success", online > 0);
      count.classList.toggle("text-bg-secondary", online === 0);
    }
  });

  // Presence switcher: away and offline ask for a reason.
  body.addEventListener("change", function (evt) {
    const radio = evt.target.closest(".presence-menu input[name=status]");
    if (!radio) {
      return;
    }
    const box = radio.form.querySelector("[data-reason-box]");
    if (box) {
      box.hidden = radio.dataset.needsReason !== "true";
    }
  });

  // ---- the inbox ------------------------------------------------------------------------------------
  // Fragments are fetched, never built here: the server renders every row, message and panel.

  function inbox() {
    return document.getElementById("inbox");
  }

  function base() {
    const element = inbox();
    return element ? element.dataset.base : null;
  }

  function openId() {
    const thread = document.querySelector("[data-open-conversation-id]");
    return thread ? thread.dataset.openConversationId : null;
  }

  // The list's own URL: /inbox or /inbox/c/<id> as the agent sees it now (the desk home shows /desk).
  function listPath() {
    return /\/inbox(\/c\/[^/]+)?$/.test(location.pathname) ? location.pathname : base();
  }

  function withState(url, extra) {
    const params = new URLSearchParams(location.search);
    Object.keys(extra || {}).forEach(function (key) {
      params.set(key, extra[key]);
    });
    const query = params.toString();
    return url + (query ? "?" + query : "");
  }

  function fetchFragment(url) {
    return fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" }).then(function (response) {
      return response.ok ? response.text() : "";
    });
  }

  function nodesOf(html) {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return Array.from(template.content.children);
  }

  function atOf(element) {
    return Date.parse(element.dataset.at || "") || 0;
  }

  const threadElement = function () {
    return document.getElementById("thread");
  };

  function nearBottom() {
    const scroller = document.getElementById("thread-scroll");
    return !scroller || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120;
  }

  function scrollToBottom() {
    const scroller = document.getElementById("thread-scroll");
    if (scroller) {
      scroller.scrollTop = scroller.scrollHeight;
    }
  }

  // Insert a thread item where its time puts it (usually the end), once.
  function placeItem(node) {
    const thread = threadElement();
    if (!thread || document.getElementById(node.id)) {
      return;
    }
    const empty = document.getElementById("thread-empty");
    if (empty) {
      empty.remove();
    }
    const at = atOf(node);
    let after = thread.lastElementChild;
    while (after && after.dataset.at && atOf(after) > at) {
      after = after.previousElementSibling;
    }
    if (after) {
      after.after(node);
    } else {
      thread.prepend(node);
    }
    htmx.process(node);
  }

  // Message id -> true when another change arrived while its fragment was being fetched (fetch again).
  const loadingMessages = new Map();

  function showMessage(conversationId, messageId, replace) {
    if (conversationId !== openId()) {
      return;
    }
    if (loadingMessages.has(messageId)) {
      if (replace) {
        loadingMessages.set(messageId, true);
      }
      return;
    }
    const existing = document.getElementById("m-" + messageId);
    if (existing && !replace) {
      return;
    }
    loadingMessages.set(messageId, false);
    const stick = nearBottom();
    fetchFragment(base() + "/c/" + conversationId + "/messages/" + messageId).then(function (html) {
      const again = loadingMessages.get(messageId);
      loadingMessages.delete(messageId);
      if (again) {
        showMessage(conversationId, messageId, true);
      }
      const node = nodesOf(html)[0];
      if (!node || conversationId !== openId()) {
        return;
      }
      const current = document.getElementById(node.id);
      if (current) {
        current.replaceWith(node);
        htmx.process(node);
      } else {
        placeItem(node);
      }
      if (stick) {
        scrollToBottom();
      }
    });
  }

  function showActivity(conversationId) {
    const thread = threadElement();
    if (conversationId !== openId() || !thread) {
      return;
    }
    let after = thread.dataset.renderedAt;
    thread.querySelectorAll(".note-item, .audit-item").forEach(function (item) {
      if (!after || atOf(item) > Date.parse(after)) {
        after = item.dataset.at;
      }
    });
    const stick = nearBottom();
    fetchFragment(base() + "/c/" + conversationId + "/activity?after=" + encodeURIComponent(after || ""))
      .then(function (html) {
        if (conversationId !== openId()) {
          return;
        }
        nodesOf(html).forEach(placeItem);
        if (stick) {
          scrollToBottom();
        }
      });
  }

  // One row, as the current list (tab and filters) shows it: moved to the top on a new message, removed
  // when the conversation left this list, added when it joined it.
  function refreshRow(conversationId, toTop) {
    const rows = document.getElementById("rows");
    if (!rows) {
      return;
    }
    fetchFragment(withState(base() + "/row/" + conversationId, { open: openId() || "" })).then(function (html) {
      const current = document.getElementById("row-" + conversationId);
      const node = nodesOf(html)[0];
      if (!node) {
        if (current) {
          current.remove();
        }
        return;
      }
      if (current && !toTop) {
        current.replaceWith(node);
      } else {
        if (current) {
          current.remove();
        }
        rows.prepend(node);
        const empty = document.getElementById("list-empty");
        if (empty) {
          empty.remove();
        }
      }
      htmx.process(node);
    });
  }

  let countsTimer = null;
  function refreshCounts() {
    clearTimeout(countsTimer);
    countsTimer = setTimeout(function () {
      htmx.trigger(body, "desk:refresh-counts");
    }, 300);
  }

  // The panel is not swapped under the agent's fingers: while they type or choose in it, the refresh
  // waits until the focus leaves it.
  function refreshPanel(conversationId) {
    const panel = document.getElementById("side-panel");
    if (conversationId !== openId() || !panel) {
      return;
    }
    fetchFragment(withState(base() + "/c/" + conversationId + "/panel")).then(function (html) {
      const current = document.getElementById("side-panel");
      if (!html || !current || conversationId !== openId()) {
        return;
      }
      if (current.contains(document.activeElement) && typing(document.activeElement)) {
        current.dataset.stale = conversationId;
        return;
      }
      delete current.dataset.stale;
      current.innerHTML = html;
      htmx.process(current);
    });
  }

  body.addEventListener("focusout", function (evt) {
    const panel = document.getElementById("side-panel");
    if (panel && panel.dataset.stale && panel.contains(evt.target)) {
      setTimeout(function () {
        if (!panel.contains(document.activeElement)) {
          refreshPanel(panel.dataset.stale);
        }
      }, 0);
    }
  });

  function conversationOf(data) {
    return String(data.conversation_id || (data.conversation || {}).id || "");
  }

  body.addEventListener("desk:message.created", function (evt) {
    const data = evt.detail.data || {};
    if (!inbox()) {
      return;
    }
    showMessage(conversationOf(data), String(data.id), false);
    refreshRow(conversationOf(data), true);
    refreshCounts();
  });

  body.addEventListener("desk:message.updated", function (evt) {
    const data = evt.detail.data || {};
    if (inbox()) {
      showMessage(conversationOf(data), String(data.id), true);
    }
  });

  ["desk:conversation.updated", "desk:conversation.assigned"].forEach(function (name) {
    body.addEventListener(name, function (evt) {
      const conversationId = conversationOf(evt.detail.data || {});
      if (!inbox() || !conversationId) {
        return;
      }
      refreshRow(conversationId, false);
      refreshCounts();
      refreshPanel(conversationId);
      showActivity(conversationId);
    });
  });

  // The open conversation's AI badge (answering / active / paused / handed off) follows the AI area's
  // events; an assignment can start or end an agent's part too.
  function refreshAiState(conversationId) {
    const current = document.getElementById("ai-state");
    if (!current || conversationId !== openId()) {
      return;
    }
    fetchFragment(base() + "/c/" + conversationId + "/ai").then(function (html) {
      const now = document.getElementById("ai-state");
      const node = nodesOf(html)[0];
      if (!node || !now || conversationId !== openId()) {
        return;
      }
      now.replaceWith(node);
      htmx.process(node);
    });
  }

  ["desk:conversation.ai_paused", "desk:conversation.ai_resumed", "desk:conversation.ai_handed_off",
    "desk:ai.run.started", "desk:ai.run.finished", "desk:conversation.assigned"].forEach(function (name) {
    body.addEventListener(name, function (evt) {
      if (inbox()) {
        refreshAiState(conversationOf(evt.detail.data || {}));
      }
    });
  });

  body.addEventListener("desk:conversation.note_added", function (evt) {
    if (inbox()) {
      showActivity(conversationOf(evt.detail.data || {}));
    }
  });

  // What the server answers to our own sends (HX-Trigger), in case the socket is slower or down.
  body.addEventListener("desk:sent", function (evt) {
    const detail = evt.detail || {};
    const form = evt.target.closest("form");
    clearDraft(form);
    if (form && form.id === "template-send") {
      const box = document.getElementById("template-form");
      if (box) {
        box.innerHTML = "";
      }
      document.querySelectorAll("[data-template-option]").forEach(function (option) {
        option.setAttribute("aria-pressed", "false");
      });
    }
    showMessage(String(detail.conversation_id), String(detail.message_id), false);
    refreshRow(String(detail.conversation_id), true);
  });

  body.addEventListener("desk:noted", function (evt) {
    clearDraft(evt.target.closest("form"));
    showActivity(String((evt.detail || {}).conversation_id));
  });

  // After a reconnect, fetch what the visible panes may have missed.
  body.addEventListener("desk:reconnected", function () {
    if (!inbox()) {
      return;
    }
    htmx.ajax("GET", listPath() + location.search, { target: "#list-pane", swap: "innerHTML" });
    if (openId()) {
      htmx.ajax("GET", listPath() + location.search, { target: "#conversation", swap: "innerHTML" });
    }
    htmx.trigger(body, "desk:refresh-counts");
  });

  // Links and forms of the list keep the conversation that is open (the URL is the agent's place).
  body.addEventListener("htmx:configRequest", function (evt) {
    if (evt.detail.elt.closest && evt.detail.elt.closest("[data-list-link]") && evt.detail.verb === "get") {
      const url = new URL(evt.detail.path, location.href);
      evt.detail.path = listPath() + url.search;
    }
  });

  // ---- the open conversation: room, row highlight, scroll, drafts ------------------------------------

  let joined = null;
  function followOpenConversation() {
    const conversationId = openId();
    const element = inbox();
    if (element) {
      element.classList.toggle("has-open", Boolean(conversationId));
    }
    document.querySelectorAll("#rows .conv-row").forEach(function (row) {
      const active = row.dataset.conversation === conversationId;
      row.classList.toggle("active-row", active);
      const link = row.querySelector(".conv-link");
      if (link) {
        if (active) {
          link.setAttribute("aria-current", "true");
        } else {
          link.removeAttribute("aria-current");
        }
      }
    });
    if (conversationId && conversationId !== joined) {
      if (joined) {
        socket.emit("leave_conversation", { conversation_id: joined });
      }
      joined = conversationId;
      joinConversation(conversationId);
    }
  }

  socket.on("connect", function () {
    if (joined) {
      joinConversation(joined);
    }
  });

  function restoreDrafts(root) {
    root.querySelectorAll("textarea[data-draft]").forEach(function (area) {
      const saved = localStorage.getItem(area.dataset.draft);
      if (saved && !area.value) {
        area.value = saved;
      }
    });
  }

  // What a form sent, so that emptying its box when the answer comes keeps whatever the agent typed
  // meanwhile (on a slow line the next message is often started before the first one is confirmed).
  body.addEventListener("htmx:beforeRequest", function (evt) {
    const form = evt.detail.elt;
    if (form && form.tagName === "FORM") {
      form.querySelectorAll("textarea[data-draft]").forEach(function (area) {
        area.dataset.sending = area.value;
      });
    }
  });

  function clearDraft(form) {
    if (!form) {
      return;
    }
    form.querySelectorAll("textarea[data-draft]").forEach(function (area) {
      const sent = area.dataset.sending;
      delete area.dataset.sending;
      let rest = "";
      if (sent !== undefined && area.value !== sent) {
        // typed after sending: keep it (without the sent text when it was typed on after it)
        rest = area.value.indexOf(sent) === 0 ? area.value.slice(sent.length).replace(/^\s+/, "") : area.value;
      }
      area.value = rest;
      if (rest) {
        localStorage.setItem(area.dataset.draft, rest);
      } else {
        localStorage.removeItem(area.dataset.draft);
      }
    });
    form.querySelectorAll("input[name=attachment]").forEach(function (input) {
      input.value = "";
    });
  }

  body.addEventListener("input", function (evt) {
    const area = evt.target.closest("textarea[data-draft]");
    if (area) {
      if (area.value) {
        localStorage.setItem(area.dataset.draft, area.value);
      } else {
        localStorage.removeItem(area.dataset.draft);
      }
    }
    const parameter = evt.target.closest("#template-send [data-param]");
    if (parameter) {
      const form = parameter.form;
      const preview = form.querySelector("[data-template-body]");
      const values = {};
      form.querySelectorAll("[data-param]").forEach(function (input) {
        values[input.dataset.param] = input.value;
      });
      preview.textContent = preview.dataset.templateBody.replace(/\{\{\s*([a-z0-9_]+)\s*\}\}/g, function (whole, name) {
        return values[name] || whole;
      });
    }
  });

  // Enter sends, Shift+Enter adds a line (not while an input method is composing a character).
  body.addEventListener("keydown", function (evt) {
    const area = evt.target.closest && evt.target.closest("textarea[data-enter-sends]");
    if (area && evt.key === "Enter" && !evt.shiftKey && !evt.isComposing) {
      evt.preventDefault();
      if (area.value.trim()) {
        area.form.requestSubmit();
      }
    }
  });

  // Reply or note.
  body.addEventListener("change", function (evt) {
    const mode = evt.target.closest("input[name=composer-mode]");
    if (!mode) {
      return;
    }
    const box = mode.closest(".composer");
    box.querySelectorAll("[data-mode-panel]").forEach(function (panel) {
      panel.hidden = panel.dataset.modePanel !== mode.value;
    });
    const area = box.querySelector('[data-mode-panel="' + mode.value + '"] textarea');
    if (area) {
      area.focus();
    }
  });

  // The service window's countdown; when it closes the composer turns into the template picker.
  function updateCountdown() {
    const box = document.getElementById("composer-box");
    const label = box && box.querySelector("[data-countdown]");
    if (!label || !box.dataset.expires) {
      return;
    }
    const left = Date.parse(box.dataset.expires) - Date.now();
    if (left <= 0) {
      htmx.ajax("GET", base() + "/c/" + box.dataset.conversation + "/composer", { target: "#composer", swap: "innerHTML" });
      return;
    }
    const hours = Math.floor(left / 3600000);
    const minutes = Math.floor((left % 3600000) / 60000);
    let text;
    try {
      text = new Intl.DurationFormat(document.documentElement.lang, { style: "short" }).format({ hours: hours, minutes: minutes });
    } catch (error) {
      text = hours + " h " + minutes + " min";
    }
    label.textContent = label.dataset.labelLeft.replace("%(time)s", text);
  }
  setInterval(updateCountdown, 30000);

  // Older messages load when the agent scrolls to the top, keeping what they were reading in place.
  let olderFrom = null;
  body.addEventListener("scroll", function (evt) {
    if (evt.target.id === "thread-scroll" && evt.target.scrollTop < 80) {
      const button = document.querySelector("#older [data-older]");
      if (button && olderFrom === null) {
        button.click();
      }
    }
  }, true);
  // A swapped-in composer (a live refresh, a reconnect) always gets its draft back, whichever element
  // the swap loaded.
  body.addEventListener("htmx:afterSettle", function () {
    restoreDrafts(document);
  });

  body.addEventListener("htmx:beforeRequest", function (evt) {
    if (evt.detail.elt.hasAttribute && evt.detail.elt.hasAttribute("data-older")) {
      const scroller = document.getElementById("thread-scroll");
      olderFrom = scroller.scrollHeight - scroller.scrollTop;
    }
  });

  htmx.onLoad(function (content) {
    restoreDrafts(content);
    if (olderFrom !== null && document.getElementById("thread-scroll")) {
      const scroller = document.getElementById("thread-scroll");
      scroller.scrollTop = scroller.scrollHeight - olderFrom;
      olderFrom = null;
      return;
    }
    if (content.querySelector && (content.querySelector("#thread") || content.id === "inbox" || content === body)) {
      followOpenConversation();
      scrollToBottom();
      updateCountdown();
    }
  });

  body.addEventListener("htmx:afterSettle", function (evt) {
    if (evt.detail.target && evt.detail.target.id === "list-pane") {
      followOpenConversation();
    }
  });

  // The template picker: the chosen template stays marked while its form is open.
  body.addEventListener("click", function (evt) {
    const chosen = evt.target.closest && evt.target.closest("[data-template-option]");
    if (!chosen) {
      return;
    }
    document.querySelectorAll("[data-template-option]").forEach(function (option) {
      option.setAttribute("aria-pressed", option === chosen ? "true" : "false");
    });
  });

  // ---- canned replies: "/" at the start of a word lists the organization's saved replies ------------
  // The server renders the list (/inbox/canned?q=, the contact's name already filled in); this only
  // places it, moves the choice (arrows), inserts (Enter, Tab, a click) and closes it (Esc, blur).
  let cannedTimer = null;
  let cannedTurn = 0; // answers of an older lookup are dropped
  let insertingCanned = false;

  function cannedMenu() {
    return document.getElementById("canned-menu");
  }

  // The "/word" being typed just before the caret: where it starts and what follows the "/".
  function cannedToken(area) {
    if (area.selectionStart !== area.selectionEnd) {
      return null;
    }
    const before = area.value.slice(0, area.selectionStart);
    const match = /(^|\s)\/([a-z0-9_-]{0,32})$/i.exec(before);
    return match ? { start: before.length - match[2].length - 1, typed: match[2] } : null;
  }

  function cannedOptions() {
    const menu = cannedMenu();
    return menu && !menu.hidden ? Array.from(menu.querySelectorAll("[role=option]")) : [];
  }

  function closeCanned(area) {
    clearTimeout(cannedTimer);
    cannedTurn += 1;
    const menu = cannedMenu();
    if (menu) {
      menu.hidden = true;
      menu.innerHTML = "";
    }
    if (area) {
      area.removeAttribute("aria-activedescendant");
    }
  }

  function activateCanned(area, index) {
    const options = cannedOptions();
    if (!options.length) {
      return;
    }
    const chosen = (index + options.length) % options.length;
    options.forEach(function (option, position) {
      const active = position === chosen;
      option.classList.toggle("active", active);
      option.setAttribute("aria-selected", active ? "true" : "false");
      if (active) {
        area.setAttribute("aria-activedescendant", option.id);
        option.scrollIntoView({ block: "nearest" });
      }
    });
  }

  function insertCanned(area, option) {
    const token = cannedToken(area);
    if (!token) {
      closeCanned(area);
      return;
    }
    const content = option.dataset.content || "";
    const caret = token.start + content.length;
    area.value = area.value.slice(0, token.start) + content + area.value.slice(area.selectionStart);
    area.setSelectionRange(caret, caret);
    closeCanned(area);
    area.focus();
    insertingCanned = true;
    area.dispatchEvent(new Event("input", { bubbles: true })); // the draft keeps what was inserted
    insertingCanned = false;
  }

  function lookupCanned(area) {
    const token = cannedToken(area);
    if (!token || !area.dataset.cannedUrl) {
      closeCanned(area);
      return;
    }
    clearTimeout(cannedTimer);
    cannedTurn += 1;
    const turn = cannedTurn;
    cannedTimer = setTimeout(function () {
      const url = area.dataset.cannedUrl + (area.dataset.cannedUrl.indexOf("?") === -1 ? "?" : "&") +
        "q=" + encodeURIComponent(token.typed);
      fetchFragment(url).then(function (html) {
        const menu = cannedMenu();
        if (turn !== cannedTurn || !menu || document.activeElement !== area || !cannedToken(area)) {
          return;
        }
        menu.innerHTML = html;
        menu.hidden = false;
        const first = menu.querySelector("[role=option]");
        if (first) {
          area.setAttribute("aria-activedescendant", first.id);
        } else {
          area.removeAttribute("aria-activedescendant");
        }
      });
    }, 120);
  }

  body.addEventListener("input", function (evt) {
    const area = evt.target.closest && evt.target.closest("textarea[data-canned-url]");
    if (area && !insertingCanned) {
      lookupCanned(area);
    }
  });

  // Captured before the composer's own keys (Enter sends): while the list is open they act on it.
  body.addEventListener("keydown", function (evt) {
    const area = evt.target.closest && evt.target.closest("textarea[data-canned-url]");
    const menu = cannedMenu();
    if (!area || !menu || menu.hidden || evt.isComposing) {
      return;
    }
    const options = cannedOptions();
    const current = options.findIndex(function (option) {
      return option.classList.contains("active");
    });
    if (evt.key === "Escape") {
      evt.preventDefault();
      evt.stopPropagation();
      closeCanned(area);
    } else if ((evt.key === "ArrowDown" || evt.key === "ArrowUp") && options.length) {
      evt.preventDefault();
      evt.stopPropagation();
      activateCanned(area, current + (evt.key === "ArrowDown" ? 1 : -1));
    } else if (((evt.key === "Enter" && !evt.shiftKey) || evt.key === "Tab") && options.length) {
      evt.preventDefault();
      evt.stopPropagation();
      insertCanned(area, options[Math.max(0, current)]);
    } else if (evt.key === "Enter" || evt.key === "Tab") {
      closeCanned(area); // nothing matches: the key does what it always does
    }
  }, true);

  body.addEventListener("keyup", function (evt) {
    const area = evt.target.closest && evt.target.closest("textarea[data-canned-url]");
    if (area && ["ArrowLeft", "ArrowRight", "Home", "End"].indexOf(evt.key) !== -1 && !cannedToken(area)) {
      closeCanned(area);
    }
  });

  // A click picks an option; pressing the mouse must not take the focus (and the caret) off the text.
  body.addEventListener("mousedown", function (evt) {
    if (evt.target.closest && evt.target.closest("#canned-menu")) {
      evt.preventDefault();
    }
  });

  body.addEventListener("click", function (evt) {
    const option = evt.target.closest && evt.target.closest("#canned-menu [role=option]");
    const area = document.querySelector("textarea[data-canned-url]");
    if (option && area) {
      insertCanned(area, option);
    }
  });

  body.addEventListener("focusout", function (evt) {
    if (evt.target.matches && evt.target.matches("textarea[data-canned-url]")) {
      closeCanned(evt.target);
    }
  });

  // ---- keyboard ------------------------------------------------------------------------------------
  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  function step(offset) {
    const rows = Array.from(document.querySelectorAll("#rows .conv-row"));
    if (!rows.length) {
      return;
    }
    const current = rows.findIndex(function (row) {
      return row.dataset.conversation === openId();
    });
    const next = rows[Math.max(0, Math.min(rows.length - 1, current === -1 ? 0 : current + offset))];
    const link = next.querySelector(".conv-link");
    link.focus();
    link.click();
  }

  document.addEventListener("keydown", function (evt) {
    if (!inbox() || evt.ctrlKey || evt.metaKey || evt.altKey || typing(evt.target)) {
      return;
    }
    if (document.querySelector(".modal.show")) {
      return;
    }
    if (evt.key === "j" || evt.key === "k") {
      evt.preventDefault();
      step(evt.key === "j" ? 1 : -1);
    } else if (evt.key === "r") {
      const area = document.querySelector("#composer textarea:not([hidden])");
      const visible = Array.from(document.querySelectorAll("#composer [data-mode-panel]:not([hidden]) textarea, #composer [data-mode-panel]:not([hidden]) input"))[0];
      if (visible || area) {
        evt.preventDefault();
        (visible || area).focus();
      }
    } else if (evt.key === "e") {
      const archive = document.querySelector("[data-shortcut-archive]");
      if (archive) {
        evt.preventDefault();
        archive.click();
      }
    } else if (evt.key === "/") {
      evt.preventDefault();
      document.getElementById("list-search").focus();
    } else if (evt.key === "?") {
      evt.preventDefault();
      bootstrap.Modal.getOrCreateInstance(document.getElementById("shortcuts")).show();
    }
  });

  // Narrow windows: the details panel opens over the thread.
  body.addEventListener("click", function (evt) {
    const toggle = evt.target.closest("[data-toggle-panel]");
    if (toggle) {
      const panel = document.getElementById("side-panel");
      panel.classList.toggle("show");
      toggle.setAttribute("aria-expanded", panel.classList.contains("show") ? "true" : "false");
    }
  });
})();

// Boards (the deal kanban, the ticket board): cards move between columns by drag and drop (SortableJS,
// from static/vendor) and by each card's "Move to…" menu, the keyboard and pointer-free way (WCAG 2.2,
// 2.5.7). Both paths post the same move to the card's data-move-url with the column's value, and the
// server answers the card again (with the columns' counts and totals out of band) or refuses: then the
// card goes back where it was and the refusal shows in the alert area. A column marked data-needs-reason
// (a lost stage) asks for a reason first. A live update for a card being dragged waits for the drop.
(function () {
  "use strict";

  const csrf = (document.querySelector("meta[name=csrf-token]") || {}).content || "";
  let dragging = null; // the card element a pointer is dragging
  const waiting = new Map(); // card id -> live refresh deferred until its drag ends

  function alertFrom(html) {
    const area = document.getElementById("desk-alerts");
    if (area && html) {
      area.insertAdjacentHTML("afterbegin", html);
    }
  }

  function askReason(column) {
    const dialog = document.getElementById("board-reason");
    if (!dialog || !window.bootstrap) {
      return Promise.resolve(null);
    }
    const form = dialog.querySelector("form");
    const input = dialog.querySelector("[name=reason]");
    const title = dialog.querySelector("[data-reason-column]");
    if (title) {
      title.textContent = column.dataset.columnName || "";
    }
    input.value = "";
    const modal = window.bootstrap.Modal.getOrCreateInstance(dialog);
    return new Promise(function (resolve) {
      let answered = false;
      function submit(evt) {
        evt.preventDefault();
        if (!input.value.trim()) {
          input.focus();
          return;
        }
        answered = true;
        modal.hide();
        resolve(input.value.trim());
      }
      form.addEventListener("submit", submit);
      dialog.addEventListener(
        "hidden.bs.modal",
        function () {
          form.removeEventListener("submit", submit);
          if (!answered) {
            resolve(null);
          }
        },
        { once: true }
      );
      dialog.addEventListener("shown.bs.modal", function () { input.focus(); }, { once: true });
      modal.show();
    });
  }

  function putBack(card, from, next) {
    if (next && next.parentNode === from) {
      from.insertBefore(card, next);
    } else {
      from.appendChild(card);
    }
  }

  // A live refresh of the card waits until its move is answered (or put back): it would undo the drop.
  async function move(card, column, from, next) {
    const cardId = card.dataset.cardId;
    card.dataset.moving = "1";
    try {
      await moveNow(card, column, from, next);
    } finally {
      delete card.dataset.moving;
      release(cardId);
    }
  }

  function release(cardId) {
    const deferred = waiting.get(cardId);
    if (deferred) {
      waiting.delete(cardId);
      deferred();
    }
  }

  async function moveNow(card, column, from, next) {
    const value = column.dataset.columnValue;
    const values = new URLSearchParams({ to: value });
    if (column.dataset.needsReason !== undefined) {
      const reason = await askReason(column);
      if (reason === null) {
        putBack(card, from, next);
        return;
      }
      values.set("reason", reason);
    }
    card.classList.add("board-card-saving");
    let response;
    try {
      response = await fetch(card.dataset.moveUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrf, "HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded" },
        body: values,
        credentials: "same-origin",
      });
    } catch (error) {
      response = null;
    }
    card.classList.remove("board-card-saving");
    const html = response ? await response.text() : "";
    if (!response || !response.ok) {
      putBack(card, from, next);
      alertFrom(html || "");
      card.focus();
      return;
    }
    const board = card.closest("[data-board]");
    if (board && html && stale(board, html)) {
      reloadView(board); // moved, on a board whose columns changed meanwhile: shown again as it is
      return;
    }
    if (window.htmx && html) {
      window.htmx.swap(card, html, { swapStyle: "outerHTML" });
    }
    const moved = document.querySelector('[data-card-id="' + card.dataset.cardId + '"]');
    if (moved) {
      moved.focus();
    }
  }

  function cardsOf(column) {
    return column.querySelector("[data-cards]");
  }

  function setUp(root) {
    if (typeof Sortable === "undefined") {
      return;
    }
    root.querySelectorAll("[data-board] [data-cards]").forEach(function (list) {
      if (list.dataset.sortable) {
        return;
      }
      list.dataset.sortable = "1";
      Sortable.create(list, {
        group: list.closest("[data-board]").dataset.board,
        draggable: "[data-card]",
        filter: "button, a, input, select, .dropdown-menu",
        preventOnFilter: false,
        animation: 120,
        onStart: function (evt) {
          dragging = evt.item;
        },
        onEnd: function (evt) {
          dragging = null;
          const card = evt.item;
          if (evt.from !== evt.to) {
            move(card, evt.to.closest("[data-column]"), evt.from, evt.from.children[evt.oldIndex] || null);
          }
          release(card.dataset.cardId);
        },
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.body.addEventListener("htmx:afterSettle", function (evt) {
    setUp(evt.target);
    once();
  });

  // A card is on a board once: the agent's own new ticket comes in the create's answer and, when its
  // event is quicker, from a live update too.
  function once() {
    const board = dragging ? null : document.querySelector("[data-board]");
    const seen = new Set();
    (board ? board.querySelectorAll("[data-card][data-card-id]") : []).forEach(function (card) {
      if (seen.has(card.dataset.cardId)) {
        card.remove();
      } else {
        seen.add(card.dataset.cardId);
      }
    });
  }

  // "Move to…": the same move, chosen from the card's menu.
  document.addEventListener("click", function (evt) {
    const item = evt.target.closest("[data-move-to]");
    if (!item) {
      return;
    }
    evt.preventDefault();
    const card = item.closest("[data-card]");
    const board = card.closest("[data-board]");
    const column = board.querySelector('[data-column][data-column-value="' + item.dataset.moveTo + '"]');
    if (!column) {
      return;
    }
    const from = card.parentNode;
    const next = card.nextElementSibling;
    cardsOf(column).prepend(card);
    move(card, column, from, next);
  });

  // Live: a card changed elsewhere is fetched again (its data-refresh-url, with the board's query) and put
  // in the column its answer names (data-in), at its place in the column's order (data-order), or removed
  // (an empty answer: it left this board; a 404: deleted). A deal or ticket the board does not show (new,
  // or now under the filters) is asked for at the board's data-card-url: the card, or 204 when it is not
  // on this board. Card answers carry every column head out of band; a removal or a 204 that may concern
  // a card not loaded (a column with more to load) fetches the heads alone (data-heads-url, once after a
  // burst). One request per card at a time; a card being dragged or saved is refreshed once it is
  // dropped or answered. A reconnect fetches the whole view again (events may have been missed).
  const inFlight = new Map(); // card id -> {again: true when another event came during the request}
  const eventsOf = { deals: ["deal.moved", "deal.updated"], tickets: ["ticket.updated"] };

  function busy(card) {
    return card === dragging || card.dataset.moving === "1";
  }

  function liveBoard() {
    return document.querySelector("[data-board][data-card-url]");
  }

  function cardIn(board, cardId) {
    return board.querySelector('[data-card-id="' + CSS.escape(cardId) + '"]');
  }

  // An answer whose column heads are not the board's (a stage created since the board was shown, or one
  // deleted) is about columns this board does not have: the view is fetched again instead (swapped in,
  // a head with no column to land in would be htmx's oobErrorNoTarget, a card for a new stage would have
  // nowhere to go). So is one with any out-of-band part the page has no place for.
  function stale(board, html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const parts = template.content.querySelectorAll("[hx-swap-oob][id]");
    if (Array.prototype.some.call(parts, function (part) { return !document.getElementById(part.id); })) {
      return true;
    }
    const heads = template.content.querySelectorAll(".board-column-head[id]");
    if (!heads.length) {
      return false;
    }
    const shown = board.querySelectorAll("[data-column] .board-column-head[id]");
    const named = new Set(Array.prototype.map.call(heads, function (head) { return head.id; }));
    return shown.length !== named.size ||
      Array.prototype.some.call(shown, function (head) { return !named.has(head.id); });
  }

  // The board's view pane fetched again (filters and pipeline as the URL says), once no card is in hand.
  function reloadView(board) {
    const pane = board && board.closest("#deals-view, #ticket-view");
    if (!pane || !window.htmx || !board.isConnected) {
      return;
    }
    if (dragging || board.querySelector('[data-moving="1"]')) {
      window.setTimeout(function () { reloadView(board); }, 1000);
      return;
    }
    if (pane.dataset.reloading) {
      return; // one is on its way: it shows every column as it is now
    }
    pane.dataset.reloading = "1";
    window.htmx
      .ajax("GET", window.location.pathname + window.location.search, { target: pane, swap: "innerHTML" })
      .finally(function () { delete pane.dataset.reloading; });
  }

  let headsTimer = null;
  function refreshHeads(board) {
    window.clearTimeout(headsTimer);
    headsTimer = window.setTimeout(function () {
      if (!board.isConnected || !board.dataset.headsUrl || !window.htmx) {
        return;
      }
      fetch(board.dataset.headsUrl, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
        .then(function (response) {
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html === null || !board.isConnected) {
            return;
          }
          if (stale(board, html)) {
            reloadView(board);
          } else {
            window.htmx.swap(board, html, { swapStyle: "none" });
          }
        })
        .catch(function () {});
    }, 300);
  }

  // The card at its place in the column its answer names: before the first card that sorts after it, or
  // at the end; not at all when its place is in a page of the column not loaded yet ("load more").
  function place(board, card) {
    const column = board.querySelector(
      '[data-column][data-column-value="' + CSS.escape(card.dataset.in || "") + '"]'
    );
    if (!column) {
      card.remove();
      return;
    }
    const list = cardsOf(column);
    const order = card.dataset.order || "";
    const after = Array.prototype.find.call(list.children, function (other) {
      return other !== card && other.matches("[data-card]") && (other.dataset.order || "") < order;
    });
    if (after) {
      list.insertBefore(card, after);
    } else if (list.querySelector(":scope > .board-more")) {
      card.remove();
      return;
    } else {
      list.appendChild(card);
    }
    list.querySelectorAll(":scope > [data-empty]").forEach(function (empty) { empty.remove(); });
  }

  function answered(board, cardId, status, html) {
    if (!board.isConnected) {
      return; // the view was shown again meanwhile (filters, a reconnect): its cards are current
    }
    const current = cardIn(board, cardId);
    if (current && busy(current)) {
      waiting.set(cardId, function () { liveCard(cardId); });
      return;
    }
    if (status === 200) {
      if (stale(board, html)) {
        reloadView(board);
        return;
      }
      if (current) {
        window.htmx.swap(current, html, { swapStyle: "outerHTML" });
      } else {
        window.htmx.swap(board.querySelector("[data-cards]"), html, { swapStyle: "afterbegin" });
      }
      const fresh = cardIn(board, cardId);
      if (fresh && (!current || fresh.closest("[data-column]").dataset.columnValue !== fresh.dataset.in)) {
        place(board, fresh); // new here, or moved to another column elsewhere
      }
      return;
    }
    if (status !== 204 && status !== 404) {
      return; // a failure says nothing about the card: it stays as it is
    }
    // 204: not on this board; 404: deleted, or not this organization's to see
    if (current) {
      current.remove();
    }
    if (current || board.querySelector(".board-more")) {
      refreshHeads(board);
    }
  }

  function liveCard(cardId) {
    const board = liveBoard();
    if (!board || !window.htmx) {
      return;
    }
    const card = cardIn(board, cardId);
    if (card && busy(card)) {
      waiting.set(cardId, function () { liveCard(cardId); });
      return;
    }
    const running = inFlight.get(cardId);
    if (running) {
      running.again = true;
      return;
    }
    const slot = { again: false };
    inFlight.set(cardId, slot);
    const url = card
      ? card.dataset.refreshUrl
      : board.dataset.cardUrl.split(board.dataset.cardUrlId).join(encodeURIComponent(cardId));
    fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        return response.text().then(function (html) { answered(board, cardId, response.status, html); });
      })
      .catch(function () {})
      .finally(function () {
        inFlight.delete(cardId);
        if (slot.again) {
          liveCard(cardId);
        }
      });
  }

  Object.keys(eventsOf).forEach(function (kind) {
    eventsOf[kind].forEach(function (name) {
      document.body.addEventListener("desk:" + name, function (evt) {
        const data = (evt.detail && evt.detail.data) || {};
        const board = liveBoard();
        if (data.id && board && board.dataset.board === kind) {
          liveCard(String(data.id));
        }
      });
    });
  });

  document.body.addEventListener("desk:reconnected", function () {
    reloadView(liveBoard());
  });
})();

// The deal list (the board's table view) follows the board's events too. A row it shows is fetched again
// (data-row-url with its id, under the list's filters) and swapped in place with the totals out of band;
// an empty answer (the deal left the list: deleted, another pipeline, filtered out) or a 404 fetches the
// list again (data-view-url: filters, order and page), as does a deal it does not show that now belongs
// in it (asked with new=1: 204 when it does not), so that the row lands at its place in the list's order
// and pages. Fetching the list again waits for a burst of events to end; the focus stays on the row (or
// the sort header) it was on. A reconnect fetches the list again (events may have been missed).
(function () {
  "use strict";

  const inFlight = new Map(); // deal id -> {again: true when another event came during the request}
  let reloadTimer = null;

  function liveList() {
    return document.querySelector("[data-deal-list][data-row-url]");
  }

  function rowOf(list, dealId) {
    return list.querySelector('tr[data-deal-id="' + CSS.escape(dealId) + '"]');
  }

  function rowUrl(list, dealId, isNew) {
    const url = new URL(
      list.dataset.rowUrl.split(list.dataset.rowUrlId).join(encodeURIComponent(dealId)),
      window.location.href
    );
    if (isNew) {
      url.searchParams.set("new", "1");
    }
    return url.pathname + url.search;
  }

  // Where the focus was, said so that it can be found again in the list fetched anew.
  function focusKey(list) {
    const active = document.activeElement;
    if (!active || !list.contains(active)) {
      return null;
    }
    const row = active.closest("tr[data-deal-id]");
    if (row) {
      return 'tr[data-deal-id="' + CSS.escape(row.dataset.dealId) + '"] a';
    }
    const sort = active.closest("th");
    if (sort && sort.parentElement) {
      return "thead th:nth-child(" + (Array.prototype.indexOf.call(sort.parentElement.children, sort) + 1) + ") a";
    }
    return null;
  }

  function reloadList() {
    window.clearTimeout(reloadTimer);
    reloadTimer = window.setTimeout(function () {
      const list = liveList();
      const pane = list && list.closest("#deals-view");
      if (!pane || !window.htmx) {
        return;
      }
      const focus = focusKey(list);
      window.htmx.ajax("GET", list.dataset.viewUrl, { target: pane, swap: "innerHTML" }).then(function () {
        const again = focus && pane.querySelector("[data-deal-list] " + focus);
        if (again) {
          again.focus();
        }
      });
    }, 300);
  }

  function answered(list, dealId, status, html) {
    if (!list.isConnected) {
      return; // the list was shown again meanwhile: its rows are current
    }
    const current = rowOf(list, dealId);
    if (status === 204) {
      return; // not in this list, now or before
    }
    if (status !== 200 && status !== 404) {
      return; // a failure says nothing about the deal: the row stays as it is
    }
    if (status === 404 && !current) {
      return; // not this organization's to see, and not shown
    }
    const template = document.createElement("template");
    template.innerHTML = status === 200 ? html : "";
    const row = template.content.querySelector("tr[data-deal-id]");
    if (!current || !row) {
      reloadList(); // joined the list, or left it: its place and the pages change
      return;
    }
    const refocus = current.contains(document.activeElement);
    window.htmx.swap(current, html, { swapStyle: "outerHTML" });
    const fresh = rowOf(list, dealId);
    if (refocus && fresh && fresh.querySelector("a")) {
      fresh.querySelector("a").focus();
    }
  }

  function liveRow(dealId) {
    const list = liveList();
    if (!list || !window.htmx) {
      return;
    }
    const running = inFlight.get(dealId);
    if (running) {
      running.again = true;
      return;
    }
    const slot = { again: false };
    inFlight.set(dealId, slot);
    fetch(rowUrl(list, dealId, !rowOf(list, dealId)), { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        return response.text().then(function (html) { answered(list, dealId, response.status, html); });
      })
      .catch(function () {})
      .finally(function () {
        inFlight.delete(dealId);
        if (slot.again) {
          liveRow(dealId);
        }
      });
  }

  ["deal.moved", "deal.updated"].forEach(function (name) {
    document.body.addEventListener("desk:" + name, function (evt) {
      const data = (evt.detail && evt.detail.data) || {};
      if (data.id && liveList()) {
        liveRow(String(data.id));
      }
    });
  });

  document.body.addEventListener("desk:reconnected", function () {
    if (liveList()) {
      reloadList();
    }
  });
})();

// Live drawers and the task list. A record's sheet ([data-live-sheet]: the deal drawer over the board or
// the deal's page, the ticket drawer or page) fetches itself again (data-live-url) when an event names its
// record (deal.updated, deal.moved, ticket.updated, and task.updated of one of its tasks) or after a
// reconnect, and swaps its parts (data-live-parts, matched by id) one by one, as the inbox's side panel
// does: a part holding the focus, a request in flight or a row being dragged is left as it is (marked
// data-live-stale) and fetched again once the focus leaves it. Text typed in a part and not sent yet is
// kept, and an open <details> stays open. When the record is gone (204) the sheet shows its
// template[data-live-gone] instead of its parts. The task list fetches itself (hx-trigger on #task-list);
// the rail's badges are fetched again once a burst of task changes is over, since the rail's own trigger
// is throttled and drops a change that follows another within 3 s.
(function () {
  "use strict";

  const body = document.body;
  if (!body.dataset.environment) {
    return;
  }
  const timers = new WeakMap(); // sheet -> the timer gathering a burst of events into one request
  const runs = new WeakMap(); // sheet -> {running, again, generation}

  function sheets(kind, id) {
    return Array.prototype.filter.call(document.querySelectorAll("[data-live-sheet]"), function (sheet) {
      return (!kind || sheet.dataset.liveSheet === kind) && (!id || sheet.dataset.liveId === id);
    });
  }

  function shown(sheet) {
    const drawer = sheet.closest(".offcanvas");
    return !drawer || drawer.classList.contains("show") || drawer.classList.contains("showing");
  }

  function partsOf(root, sheet) {
    return Array.prototype.slice.call(root.querySelectorAll(sheet.dataset.liveParts || "[data-live-part]"));
  }

  // The sheet a part belongs to (a ticket's header part sits beside its sheet, not inside it).
  function sheetOf(part) {
    return part.closest("[data-live-sheet]") ||
      (part.parentElement && part.parentElement.querySelector(":scope > [data-live-sheet]"));
  }

  function busy(part) {
    const active = document.activeElement;
    return (active && active !== body && part.contains(active)) ||
      part.matches(".htmx-request, [aria-busy=true]") ||
      part.querySelector(".htmx-request, [aria-busy=true], .sortable-chosen, .sortable-ghost") !== null;
  }

  // What was typed or chosen in a part's fields and not sent: kept across the part's swap.
  function typed(part) {
    const found = [];
    part.querySelectorAll("input[id], textarea[id], select[id]").forEach(function (field) {
      if (field.type === "hidden" || field.type === "checkbox" || field.type === "radio") {
        return;
      }
      const changed = field.tagName === "SELECT"
        ? Array.prototype.some.call(field.options, function (o) { return o.selected !== o.defaultSelected; })
        : field.value !== field.defaultValue;
      if (changed) {
        found.push([field.id, field.tagName, field.value]);
      }
    });
    return found;
  }

  function retype(found) {
    found.forEach(function (entry) {
      const field = document.getElementById(entry[0]);
      if (field && field.tagName === entry[1]) {
        field.value = entry[2];
      }
    });
  }

  function apply(sheet, html) {
    const fresh = document.createElement("template");
    fresh.innerHTML = html;
    partsOf(fresh.content, sheet).forEach(function (part) {
      const current = part.id && document.getElementById(part.id);
      if (!current) {
        return;
      }
      delete current.dataset.liveStale;
      const open = current.querySelectorAll("details");
      part.querySelectorAll("details").forEach(function (details, index) {
        if (open[index]) {
          details.open = open[index].open;
        }
      });
      if (current.outerHTML === part.outerHTML) {
        return; // nothing changed here
      }
      if (busy(current)) {
        current.dataset.liveStale = "1";
        return;
      }
      const kept = typed(current);
      window.htmx.swap(current, part.outerHTML, { swapStyle: "outerHTML" });
      retype(kept);
    });
  }

  function removeParts(sheet) {
    partsOf(sheet, sheet).forEach(function (part) {
      if (busy(part)) {
        part.dataset.liveStale = "1";
      } else {
        part.remove();
      }
    });
  }

  function gone(sheet) {
    if (!sheet.dataset.liveGone) {
      sheet.dataset.liveGone = "1";
      const notice = sheet.querySelector("template[data-live-gone]");
      if (notice) {
        sheet.insertAdjacentHTML("afterbegin", notice.innerHTML);
      }
    }
    removeParts(sheet);
  }

  function refresh(sheet) {
    if (!sheet.isConnected || !window.htmx) {
      return;
    }
    if (sheet.dataset.liveGone) {
      removeParts(sheet);
      return;
    }
    if (!shown(sheet)) {
      return; // a closed drawer: opening it from a card fetches it again
    }
    let run = runs.get(sheet);
    if (!run) {
      run = { running: false, again: false, generation: 0 };
      runs.set(sheet, run);
    }
    if (run.running) {
      run.again = true;
      return;
    }
    run.running = true;
    const generation = run.generation;
    fetch(sheet.dataset.liveUrl, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 204 || response.status === 404) {
          gone(sheet); // deleted elsewhere (204), or no longer this organization's to see
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null || !sheet.isConnected) {
          return;
        }
        if (run.generation !== generation) {
          run.again = true; // the agent's own change answered meanwhile: ask again, after it
          return;
        }
        apply(sheet, html);
      })
      .catch(function () {})
      .finally(function () {
        run.running = false;
        if (run.again) {
          run.again = false;
          later(sheet);
        }
      });
  }

  function later(sheet) {
    window.clearTimeout(timers.get(sheet));
    timers.set(sheet, window.setTimeout(function () { refresh(sheet); }, 150));
  }

  function follow(kind, id) {
    if (id) {
      sheets(kind, String(id)).forEach(later);
    }
  }

  function dataOf(evt) {
    return (evt.detail && evt.detail.data) || {};
  }

  body.addEventListener("desk:deal.updated", function (evt) { follow("deal", dataOf(evt).id); });
  body.addEventListener("desk:deal.moved", function (evt) { follow("deal", dataOf(evt).id); });
  body.addEventListener("desk:ticket.updated", function (evt) { follow("ticket", dataOf(evt).id); });
  body.addEventListener("desk:task.updated", function (evt) {
    follow("deal", dataOf(evt).deal_id);
    follow("ticket", dataOf(evt).ticket_id);
  });
  body.addEventListener("desk:reconnected", function () { sheets().forEach(later); });

  // A request from inside a sheet (the agent's own edit) makes a live answer already on its way stale:
  // when it starts, and when it is answered (before its swap, while its element is still in the page).
  // One sent before the live fetch may commit after the fetch read the record, and the fetch's older
  // parts would then overwrite what the edit just showed.
  ["htmx:beforeRequest", "htmx:beforeSwap", "htmx:afterRequest"].forEach(function (name) {
    body.addEventListener(name, function (evt) {
      const sheet = evt.target.closest && (evt.target.closest("[data-live-sheet]") ||
        (evt.target.closest("[data-live-part]") && sheetOf(evt.target.closest("[data-live-part]"))));
      const run = sheet && runs.get(sheet);
      if (run) {
        run.generation += 1;
      }
    });
  });

  // A part left stale is refreshed once the focus has left it, or once its request has been answered.
  body.addEventListener("focusout", function (evt) {
    const part = evt.target.closest && evt.target.closest("[data-live-stale]");
    if (!part) {
      return;
    }
    window.setTimeout(function () {
      const sheet = part.isConnected && !busy(part) && sheetOf(part);
      if (sheet) {
        later(sheet);
      }
    }, 0);
  });

  body.addEventListener("htmx:afterSettle", function () {
    document.querySelectorAll("[data-live-stale]").forEach(function (part) {
      const sheet = !busy(part) && sheetOf(part);
      if (sheet) {
        later(sheet);
      }
    });
  });

  // The rail's badges (the overdue tasks) once a burst of task changes is over.
  let railTimer = null;
  body.addEventListener("desk:task.updated", function () {
    window.clearTimeout(railTimer);
    railTimer = window.setTimeout(function () {
      const rail = document.getElementById("rail-items");
      const url = rail && rail.getAttribute("hx-get");
      if (url && window.htmx) {
        window.htmx.ajax("GET", url, { source: rail, swap: "none" });
      }
    }, 600);
  });
})();

// Sortable lists (the deal drawer's line items): rows reorder by dragging their handle (SortableJS, from
// static/vendor) and by their "Move up" / "Move down" buttons, the keyboard and pointer-free way (WCAG
// 2.2, 2.5.7). Generic on data attributes: a list [data-sortable-list] whose rows [data-sortable-item]
// carry data-move-url, a handle [data-sortable-handle] in a row, buttons [data-sortable-move="up|down"].
// Both paths post the row's new 0-based place (position) to its data-move-url. The answer, the list's
// section again in the stored order, replaces the element the list's data-sortable-swap names, and the
// focus goes back to the moved row's button. A refusal about the place comes back as that section with
// its words by the row (422); any other is the alert area's, and the rows go back to their order.
(function () {
  "use strict";

  const csrf = (document.querySelector("meta[name=csrf-token]") || {}).content || "";

  function rowsOf(list) {
    return Array.prototype.filter.call(list.children, function (child) {
      return child.matches("[data-sortable-item]");
    });
  }

  function refocus(rowId, direction) {
    const row = rowId && document.getElementById(rowId);
    if (!row || !direction) {
      return;
    }
    const other = direction === "up" ? "down" : "up";
    const button = [direction, other]
      .map(function (which) { return row.querySelector('[data-sortable-move="' + which + '"]'); })
      .find(function (found) { return found && !found.disabled; });
    if (button) {
      button.focus();
    }
  }

  async function place(list, row, position, restore, direction) {
    if (list.getAttribute("aria-busy") === "true") {
      restore();
      return;
    }
    list.setAttribute("aria-busy", "true");
    let response;
    try {
      response = await fetch(row.dataset.moveUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrf, "HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ position: String(position) }),
        credentials: "same-origin",
      });
    } catch (error) {
      response = null;
    }
    const html = response ? await response.text() : "";
    const section = list.dataset.sortableSwap ? document.querySelector(list.dataset.sortableSwap) : null;
    const answered = response && (response.ok || (response.status === 422 && !response.headers.get("HX-Retarget")));
    if (answered && section && html && window.htmx) {
      window.htmx.swap(section, html, { swapStyle: "outerHTML" });
      setUp(document);
      refocus(row.id, direction);
      return;
    }
    list.removeAttribute("aria-busy");
    restore();
    const area = document.getElementById("desk-alerts");
    if (area && html) {
      area.insertAdjacentHTML("afterbegin", html);
    }
  }

  function setUp(root) {
    if (typeof Sortable === "undefined") {
      return; // the buttons still move rows
    }
    root.querySelectorAll("[data-sortable-list]").forEach(function (list) {
      if (list.dataset.sortableReady) {
        return;
      }
      list.dataset.sortableReady = "1";
      let before = [];
      Sortable.create(list, {
        draggable: "[data-sortable-item]",
        handle: "[data-sortable-handle]",
        animation: 120,
        onStart: function () {
          before = rowsOf(list);
        },
        onEnd: function (evt) {
          const order = before;
          const to = rowsOf(list).indexOf(evt.item);
          if (to < 0 || to === order.indexOf(evt.item)) {
            return;
          }
          place(list, evt.item, to, function () {
            order.forEach(function (row) { list.appendChild(row); });
          }, null);
        },
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.body.addEventListener("htmx:afterSettle", function () { setUp(document); });

  // "Move up" / "Move down": the same post, one place up or down; the rows move when the answer comes.
  document.addEventListener("click", function (evt) {
    const button = evt.target.closest("[data-sortable-move]");
    if (!button || button.disabled) {
      return;
    }
    const row = button.closest("[data-sortable-item]");
    const list = row && row.closest("[data-sortable-list]");
    if (!list) {
      return;
    }
    evt.preventDefault();
    const index = rowsOf(list).indexOf(row);
    const to = index + (button.dataset.sortableMove === "up" ? -1 : 1);
    if (index < 0 || to < 0 || to >= rowsOf(list).length) {
      return;
    }
    place(list, row, to, function () {}, button.dataset.sortableMove);
  });
})();

// Agent studio: knowledge and test chat. The test chat's form ([data-test-chat]) sends on Enter (Shift+Enter
// is a new line); once a turn is appended the box is emptied and the log scrolls to its end. A refused
// configuration offers "Go to the field" ([data-studio-field]): the studio's field of that configuration
// path is shown (its tab opened) and focused.
(function () {
  "use strict";

  document.addEventListener("keydown", function (evt) {
    const input = evt.target.closest && evt.target.closest("[data-test-chat-input]");
    if (!input || evt.key !== "Enter" || evt.shiftKey || evt.isComposing) {
      return;
    }
    evt.preventDefault();
    if (input.value.trim() && input.form && !input.form.querySelector("button[type=submit]:disabled")) {
      input.form.requestSubmit();
    }
  });

  document.body.addEventListener("htmx:afterRequest", function (evt) {
    const form = evt.detail.elt;
    if (!form.matches || !form.matches("[data-test-chat]") || !evt.detail.successful) {
      return;
    }
    if (evt.detail.xhr.status !== 200) {
      return; // a refusal: what was typed stays
    }
    const input = form.querySelector("[data-test-chat-input]");
    if (input) {
      input.value = "";
      input.focus();
    }
  });

  document.body.addEventListener("htmx:afterSettle", function (evt) {
    const log = evt.detail.target;
    if (log && log.id === "test-chat-log") {
      log.scrollTop = log.scrollHeight;
    }
  });

  document.addEventListener("click", function (evt) {
    const button = evt.target.closest("[data-studio-field]");
    if (!button) {
      return;
    }
    const name = button.dataset.studioField;
    const field = Array.from(document.querySelectorAll("[name]")).find(function (el) {
      return el.name === name && el.type !== "hidden";
    });
    if (!field) {
      return;
    }
    const pane = field.closest(".tab-pane");
    if (pane && !pane.classList.contains("active") && window.bootstrap) {
      const tab = document.querySelector('[data-bs-target="#' + pane.id + '"]');
      if (tab) {
        window.bootstrap.Tab.getOrCreateInstance(tab).show();
      }
    }
    const details = field.closest("details");
    if (details) {
      details.open = true;
    }
    field.focus();
    field.scrollIntoView({ block: "center" });
  });
})();

// Agent studio: the configuration editor (#studio-form). Edits mark the form dirty ("Unsaved edits", a
// warning before leaving the page, only while dirty); the server's answer to Save replaces the form (a
// saved form is clean, a refused or conflicting one keeps what was typed and stays dirty) and opens the
// tab of the refused field. Prompt sections: add, rename (the textarea's name follows: sections.<name>,
// and so does the card's hidden section_order input), remove, reorder by drag (SortableJS, the grip) or by
// the Move up / Move down buttons (the hidden inputs move with their cards, so the form posts the order
// shown and the preview follows it), a character count. Call-transfer rules: add (from the template, the
// next index) and remove. A version saved elsewhere (agent_config.updated) is announced with who saved it
// (the event's changed_by_name, or the API key's prefix), never swapped in: the form stays as typed.
(function () {
  "use strict";

  const studio = document.getElementById("studio");
  if (!studio) {
    return;
  }
  let dirty = false;
  let announced = 0;
  let author = ""; // who saved the version announced (its changed_by_name; an API key by its prefix)

  function form() {
    return document.getElementById("studio-form");
  }

  function setDirty(value) {
    dirty = value;
    const note = form() && form().querySelector("[data-studio-dirty]");
    if (note) {
      note.hidden = !value;
    }
  }

  function changed() {
    setDirty(true);
    document.body.dispatchEvent(new CustomEvent("studio:changed", { bubbles: true }));
  }

  window.addEventListener("beforeunload", function (evt) {
    if (dirty) {
      evt.preventDefault();
      evt.returnValue = "";
    }
  });

  document.addEventListener("click", function (evt) {
    if (evt.target.closest && evt.target.closest("[data-studio-reload]")) {
      setDirty(false); // the person chose to drop the edits
    }
  });

  function showTab(key) {
    const button = document.querySelector('[data-studio-tab="' + key + '"]');
    if (button && window.bootstrap && !button.classList.contains("active")) {
      window.bootstrap.Tab.getOrCreateInstance(button).show();
    }
  }

  document.addEventListener("shown.bs.tab", function (evt) {
    const key = evt.target.dataset && evt.target.dataset.studioTab;
    const field = form() && form().querySelector("[data-studio-tab-field]");
    if (key) {
      studio.dataset.tab = key; // the Save bar belongs to the form's tabs only (desk.css)
    }
    if (key && field && key !== "versions" && key !== "knowledge") {
      field.value = key;
    }
  });

  function countOf(textarea) {
    const card = textarea.closest("[data-studio-section]");
    const count = card && card.querySelector("[data-count]");
    if (count) {
      count.textContent = textarea.value.length.toLocaleString(document.documentElement.lang || undefined);
    }
  }

  function updateMoves() {
    const list = form() && form().querySelector("[data-studio-sections]");
    if (!list) {
      return;
    }
    const cards = list.querySelectorAll("[data-studio-section]");
    cards.forEach(function (card, index) {
      const up = card.querySelector('[data-studio-move="up"]');
      const down = card.querySelector('[data-studio-move="down"]');
      if (up) {
        up.disabled = index === 0;
      }
      if (down) {
        down.disabled = index === cards.length - 1;
      }
    });
  }

  function renameSection(input) {
    const card = input.closest("[data-studio-section]");
    const textarea = card && card.querySelector("textarea");
    const order = card && card.querySelector("[data-studio-order]");
    if (textarea) {
      textarea.name = "sections." + input.value.trim();
    }
    if (order) {
      order.value = input.value.trim(); // the order the form posts names the section as renamed
    }
  }

  let uid = 0;

  function addSection() {
    const input = document.getElementById("studio-new-section");
    const template = document.getElementById("studio-section-template");
    const list = form() && form().querySelector("[data-studio-sections]");
    if (!input || !template || !list) {
      return;
    }
    const name = input.value.trim();
    if (!name) {
      input.focus();
      return;
    }
    const card = template.content.firstElementChild.cloneNode(true);
    uid += 1;
    const textarea = card.querySelector("textarea");
    const label = card.querySelector("label");
    const count = card.querySelector("[data-studio-count]");
    textarea.id = "f-added-" + uid;
    textarea.name = "sections." + name;
    if (label) {
      label.htmlFor = textarea.id;
    }
    if (count) {
      count.id = "count-added-" + uid;
      textarea.setAttribute("aria-describedby", count.id);
    }
    card.querySelector("[data-studio-section-name]").value = name;
    const order = card.querySelector("[data-studio-order]");
    if (order) {
      order.value = name;
    }
    list.appendChild(card);
    input.value = "";
    updateMoves();
    changed();
    textarea.focus();
  }

  function addTransfer() {
    const template = document.getElementById("studio-transfer-template");
    const list = form() && form().querySelector("[data-studio-transfers]");
    if (!template || !list) {
      return;
    }
    let next = 0;
    list.querySelectorAll("[data-studio-transfer]").forEach(function (row) {
      next = Math.max(next, Number(row.dataset.index) + 1);
    });
    const html = template.innerHTML.split("__i__").join(String(next));
    list.insertAdjacentHTML("beforeend", html);
    const row = list.lastElementChild;
    changed();
    const first = row && row.querySelector("input");
    if (first) {
      first.focus();
    }
  }

  document.addEventListener("click", function (evt) {
    const target = evt.target.closest ? evt.target : null;
    if (!target || !target.closest("#studio-form")) {
      return;
    }
    const move = target.closest("[data-studio-move]");
    if (move) {
      const card = move.closest("[data-studio-section]");
      const sibling = move.dataset.studioMove === "up" ? card.previousElementSibling : card.nextElementSibling;
      if (sibling) {
        if (move.dataset.studioMove === "up") {
          sibling.before(card);
        } else {
          sibling.after(card);
        }
        updateMoves();
        changed();
        if (move.disabled) {
          const other = card.querySelector('[data-studio-move="' + (move.dataset.studioMove === "up" ? "down" : "up") + '"]');
          if (other) {
            other.focus();
          }
        } else {
          move.focus();
        }
      }
      return;
    }
    const remove = target.closest("[data-studio-remove-section]");
    if (remove) {
      const card = remove.closest("[data-studio-section]");
      const next = card.nextElementSibling || card.previousElementSibling;
      card.remove();
      updateMoves();
      changed();
      const focus = next ? next.querySelector("textarea") : document.getElementById("studio-new-section");
      if (focus) {
        focus.focus();
      }
      return;
    }
    if (target.closest("[data-studio-add-section]")) {
      addSection();
      return;
    }
    if (target.closest("[data-studio-add-transfer]")) {
      addTransfer();
      return;
    }
    const removeRule = target.closest("[data-studio-remove-transfer]");
    if (removeRule) {
      removeRule.closest("[data-studio-transfer]").remove();
      changed();
      const add = form().querySelector("[data-studio-add-transfer]");
      if (add) {
        add.focus();
      }
    }
  });

  document.addEventListener("keydown", function (evt) {
    if (evt.key === "Enter" && evt.target.id === "studio-new-section") {
      evt.preventDefault();
      addSection();
    }
  });

  document.addEventListener("input", function (evt) {
    const field = evt.target;
    if (!field.closest || !field.closest("#studio-form") || field.id === "studio-new-section") {
      return;
    }
    if (field.matches("[data-studio-section-name]")) {
      renameSection(field);
    }
    if (field.matches("textarea.studio-text")) {
      countOf(field);
    }
    changed();
  });

  document.addEventListener("change", function (evt) {
    if (evt.target.closest && evt.target.closest("#studio-form") && evt.target.id !== "studio-new-section") {
      changed();
    }
  });

  function sortable() {
    const list = form() && form().querySelector("[data-studio-sections]");
    if (!list || typeof Sortable === "undefined" || list.dataset.sortableReady) {
      return;
    }
    list.dataset.sortableReady = "1";
    Sortable.create(list, {
      handle: "[data-studio-drag]",
      draggable: "[data-studio-section]",
      animation: 150,
      onEnd: function () {
        updateMoves();
        changed();
      },
    });
  }

  function announce() {
    const notice = document.getElementById("studio-live-notice");
    const current = form() ? Number(form().dataset.expectedVersion || 0) : 0;
    if (!notice) {
      return;
    }
    if (announced > current) {
      // replacement functions: a name is text, never a replacement pattern ("$&")
      const template = author ? notice.dataset.templateAuthor : notice.dataset.template;
      notice.querySelector("[data-notice-text]").textContent = template
        .replace("__author__", function () {
          return author;
        })
        .replace("__n__", String(announced));
      notice.hidden = false;
    } else {
      notice.hidden = true;
    }
  }

  document.body.addEventListener("desk:agent_config.updated", function (evt) {
    const data = (evt.detail && evt.detail.data) || {};
    if (String(data.config_id) !== studio.dataset.configId) {
      return;
    }
    const version = Number(data.version || 0);
    if (version > announced) {
      announced = version;
      const actor = String(data.changed_by || "");
      author = data.changed_by_name ? String(data.changed_by_name) : "";
      if (!author && actor.indexOf("api_key:") === 0) {
        const notice = document.getElementById("studio-live-notice");
        const prefix = actor.slice("api_key:".length);
        author = notice ? notice.dataset.apiKey.replace("__prefix__", function () {
          return prefix;
        }) : "";
      }
    }
    if (!(form() && form().classList.contains("htmx-request"))) {
      announce(); // a save of ours in flight: its answer says which version the form now is
    }
  });

  document.body.addEventListener("htmx:afterSettle", function (evt) {
    if (!evt.detail.target || evt.detail.target.id !== "studio-form") {
      return;
    }
    const fresh = form();
    setDirty(!fresh.hasAttribute("data-clean"));
    showTab(fresh.dataset.activeTab);
    sortable();
    updateMoves();
    announce();
    const invalid = fresh.querySelector("[aria-invalid=true]");
    if (invalid) {
      invalid.focus();
    } else if (fresh.querySelector("#studio-conflict")) {
      fresh.querySelector("#studio-conflict").scrollIntoView({ block: "start" });
    }
    document.body.dispatchEvent(new CustomEvent("studio:changed", { bubbles: true }));
  });

  document.body.addEventListener("htmx:beforeRequest", function (evt) {
    if (evt.detail.elt && evt.detail.elt.matches && evt.detail.elt.matches("[data-studio-restore]")) {
      setDirty(false); // confirmed: the restore reloads the page with the new version
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    sortable();
    updateMoves();
  });
  if (document.readyState !== "loading") {
    sortable();
    updateMoves();
  }
})();

// ---- Copy buttons and focus after a swap (settings pages: the API key shown once) ----------------------
// A button with data-copy="<selector>" copies that field's value; its label says "Copied" for a moment and
// a polite live region announces it. Where the Clipboard API is refused (an http page other than
// localhost), the field's text is selected instead, so Ctrl+C / long-press copies it. An element marked
// data-autofocus in swapped content takes the focus (a new key's panel, a confirmation's button).
(function () {
  "use strict";

  function announce(button, text) {
    const scope = button.closest(".card, form, section") || document;
    const status = scope.querySelector("[data-copy-status]");
    if (status) {
      status.textContent = text;
    }
    const label = button.querySelector("[data-copy-label]");
    if (label) {
      const before = label.dataset.original || label.textContent;
      label.dataset.original = before;
      label.textContent = text;
      window.setTimeout(function () { label.textContent = before; }, 2000);
    }
  }

  document.addEventListener("click", function (evt) {
    const button = evt.target.closest && evt.target.closest("[data-copy]");
    if (!button) {
      return;
    }
    const field = document.querySelector(button.dataset.copy);
    if (!field) {
      return;
    }
    const copied = button.dataset.copiedText || "Copied";
    const selectIt = function () {
      field.focus();
      field.select();
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(function () { announce(button, copied); }, selectIt);
    } else {
      selectIt();
    }
  });

  document.addEventListener("focusin", function (evt) {
    if (evt.target.matches && evt.target.matches("[data-select-on-focus]")) {
      evt.target.select();
    }
  });

  document.body.addEventListener("htmx:afterSettle", function (evt) {
    const scope = evt.detail.elt && evt.detail.elt.querySelector ? evt.detail.elt : document;
    const target = (scope.matches && scope.matches("[data-autofocus]")) ? scope : scope.querySelector("[data-autofocus]");
    if (target) {
      target.focus();
    }
  });
})();

// Broadcasts (templates/inbox/broadcasts/): the progress pane is fetched again when an event says its
// broadcast moved (broadcast.progress / completed / canceled of this broadcast, or message.updated of one
// of its messages: delivered, read, failed), at most every 400 ms; the new-broadcast form shows the list or
// the label chooser and checks the recipients again when the source changes, and fills the preview.
(function () {
  "use strict";
  const body = document.body;
  let waiting = null;
  function refreshProgress() {
    if (waiting) {
      return;
    }
    waiting = setTimeout(function () {
      waiting = null;
      const pane = document.getElementById("broadcast-progress");
      if (pane && window.htmx) {
        window.htmx.ajax("GET", pane.dataset.refreshUrl, { target: "#broadcast-progress", swap: "outerHTML" });
      }
    }, 400);
  }
  ["broadcast.progress", "broadcast.started", "broadcast.completed", "broadcast.canceled", "message.updated"]
    .forEach(function (type) {
    body.addEventListener("desk:" + type, function (evt) {
      const pane = document.getElementById("broadcast-progress");
      const data = (evt.detail && evt.detail.data) || {};
      if (!pane) {
        return;
      }
      const ours = type === "message.updated"
        ? Array.prototype.some.call(pane.querySelectorAll("[data-message-id]"), function (row) {
          return row.dataset.messageId === String(data.id);
        })
        : String(data.broadcast_id) === pane.dataset.broadcastId;
      if (ours) {
        refreshProgress();
      }
    });
  });
  body.addEventListener("desk:reconnected", function () {
    if (document.getElementById("broadcast-progress")) {
      refreshProgress();
    }
  });

  body.addEventListener("change", function (evt) {
    const source = evt.target.closest && evt.target.closest("[data-broadcast-source]");
    if (!source) {
      return;
    }
    const form = source.form;
    const byLabel = source.value === "label";
    form.querySelector(".broadcast-source-csv").hidden = byLabel;
    form.querySelector(".broadcast-source-label").hidden = !byLabel;
    const field = form.querySelector(byLabel ? "#broadcast-label" : "#broadcast-numbers");
    if (field && window.htmx) {
      window.htmx.trigger(field, byLabel ? "change" : "input");
    }
  });

  body.addEventListener("input", function (evt) {
    const parameter = evt.target.closest && evt.target.closest("#broadcast-form [data-param]");
    const preview = parameter && parameter.form.querySelector("[data-broadcast-preview]");
    if (!preview) {
      return;
    }
    const values = {};
    parameter.form.querySelectorAll("[data-param]").forEach(function (input) {
      values[input.dataset.param] = input.value;
    });
    preview.textContent = preview.dataset.templateBody.replace(/\{\{\s*([a-z0-9_]+)\s*\}\}/g, function (whole, name) {
      return values[name] || whole;
    });
  });
})();

// ---- the members area's pages --------------------------------------------------------------------------
// The team dashboard's charts (templates/members/team/_pane.html): the numbers come in the pane's
// data-team-charts attribute (JSON: the page's policy runs no inline script) and Chart.js, from
// static/vendor, draws them in the presence dots' colours. They are drawn when the page loads and again when
// the filters swap the pane; the "Now" part refreshes itself (hx-trigger on presence.updated) and leaves
// the charts alone. No animation: a chart is read, not watched, and motion is not everyone's friend.
(function () {
  "use strict";

  const COLOURS = { online: "--bs-success", busy: "--bs-danger", away: "--bs-warning", offline: "--bs-gray-500" };
  let drawn = [];

  function colour(status) {
    return getComputedStyle(document.body).getPropertyValue(COLOURS[status] || "--bs-secondary").trim();
  }

  function hours(value, unit, locale) {
    return value.toLocaleString(locale, { maximumFractionDigits: 1 }) + " " + unit;
  }

  // One bar per row (a person, a reason): the chart grows with the rows (CSSOM, which the policy allows).
  function fitRows(canvas, rows) {
    canvas.parentElement.style.height = Math.max(8, 5 + 2 * rows) + "rem";
  }

  function stackedBars(canvas, labels, series, data, horizontal) {
    const locale = data.chart.locale;
    const valueAxis = horizontal ? "x" : "y";
    const scales = { x: { stacked: true }, y: { stacked: true } };
    scales[valueAxis].beginAtZero = true;
    scales[valueAxis].title = { display: true, text: data.unit };
    return new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: labels,
        datasets: data.chart.statuses.map(function (status) {
          return {
            label: data.names[status] || status,
            data: series[status],
            backgroundColor: colour(status),
            borderWidth: 0,
            maxBarThickness: 40,
          };
        }),
      },
      options: {
        indexAxis: horizontal ? "y" : "x",
        locale: locale,
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: scales,
        plugins: {
          legend: { position: "bottom" },
          tooltip: {
            callbacks: {
              label: function (item) {
                return item.dataset.label + ": " + hours(item.raw, data.unit, locale);
              },
            },
          },
        },
      },
    });
  }

  function reasonBars(canvas, data) {
    const locale = data.chart.locale;
    return new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: data.chart.reasons.labels,
        datasets: [{
          label: data.unit,
          data: data.chart.reasons.hours,
          backgroundColor: colour("away"),
          borderWidth: 0,
          maxBarThickness: 28,
        }],
      },
      options: {
        indexAxis: "y",
        locale: locale,
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: { x: { beginAtZero: true, title: { display: true, text: data.unit } } },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { label: function (item) { return hours(item.raw, data.unit, locale); } } },
        },
      },
    });
  }

  function draw() {
    drawn.forEach(function (chart) { chart.destroy(); });
    drawn = [];
    const holder = document.querySelector("[data-team-charts]");
    if (!holder || typeof window.Chart === "undefined") {
      return;
    }
    const data = JSON.parse(holder.dataset.teamCharts);
    holder.querySelectorAll("canvas[data-team-chart]").forEach(function (canvas) {
      const kind = canvas.dataset.teamChart;
      if (kind === "days") {
        drawn.push(stackedBars(canvas, data.chart.days.labels, data.chart.days.hours, data, false));
      } else if (kind === "people") {
        fitRows(canvas, data.chart.people.labels.length);
        drawn.push(stackedBars(canvas, data.chart.people.labels, data.chart.people.hours, data, true));
      } else if (kind === "reasons") {
        fitRows(canvas, data.chart.reasons.labels.length);
        drawn.push(reasonBars(canvas, data));
      }
    });
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.body.addEventListener("htmx:afterSettle", function (evt) {
    const target = evt.detail && evt.detail.target;
    if (target && target.id === "team-pane") {
      draw();
    }
  });
})();
// ---- end of the members area's pages
