// Agent Desk: the one small script of our own. It connects the page to Socket.IO with the sign-in
// session and turns every domain event into a DOM event on <body> ("desk:<event type>", detail = the
// event), so fragments refresh themselves with hx-trigger="desk:message.created from:body" and scripts
// can listen. A reconnect (server restart, dropped network) fires "desk:reconnected" so the visible
// fragments fetch what they missed. A background tab keeps its connection: presence does not flap.
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

  window.agentDesk = { socket: socket, joinConversation: function (conversationId) {
    return new Promise(function (resolve) {
      socket.emit("join_conversation", { conversation_id: conversationId }, resolve);
    });
  } };
})();
