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

  async function move(card, column, from, next) {
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
          const deferred = waiting.get(card.dataset.cardId);
          if (deferred) {
            waiting.delete(card.dataset.cardId);
            deferred();
          }
        },
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.body.addEventListener("htmx:afterSettle", function (evt) { setUp(evt.target); });

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

  // Live: a card another person changed is fetched again (data-refresh-url), unless it is being dragged.
  function refreshCard(cardId) {
    const card = document.querySelector('[data-board] [data-card-id="' + cardId + '"]');
    if (!card || !card.dataset.refreshUrl || !window.htmx) {
      return;
    }
    if (card === dragging) {
      waiting.set(cardId, function () { refreshCard(cardId); });
      return;
    }
    const board = card.closest("[data-board]");
    fetch(card.dataset.refreshUrl, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 404) {
          card.remove(); // deleted, or no longer this organization's to see
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        const current = board.querySelector('[data-card-id="' + cardId + '"]');
        if (!current) {
          return;
        }
        window.htmx.swap(current, html, { swapStyle: "outerHTML" });
        // the card says which column it belongs in now (data-in): a move made elsewhere moves it here too
        const fresh = board.querySelector('[data-card-id="' + cardId + '"]');
        if (!fresh || !fresh.dataset.in) {
          return;
        }
        const column = board.querySelector('[data-column][data-column-value="' + fresh.dataset.in + '"]');
        if (column && fresh.closest("[data-column]") !== column) {
          cardsOf(column).prepend(fresh);
        }
      });
  }

  ["deal.moved", "deal.updated", "ticket.updated"].forEach(function (name) {
    document.body.addEventListener("desk:" + name, function (evt) {
      const data = (evt.detail && evt.detail.data) || {};
      const id = data.deal_id || data.ticket_id || data.id;
      if (id) {
        refreshCard(String(id));
      }
    });
  });
})();
