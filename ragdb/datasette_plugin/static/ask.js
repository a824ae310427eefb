// ragdb's question page: POST the question to /-/ragdb/answer?stream=1 and read the
// server-sent events with fetch + a ReadableStream reader (EventSource cannot POST).
// Everything from the server is inserted as text, never as HTML.
(function () {
  "use strict";

  var form = document.getElementById("ragdb-form");
  var question = document.getElementById("ragdb-q");
  var kInput = document.getElementById("ragdb-k");
  var button = document.getElementById("ragdb-submit");
  var statusLine = document.getElementById("ragdb-status");
  var answerSection = document.getElementById("ragdb-answer-section");
  var answerBox = document.getElementById("ragdb-answer");
  var modelLine = document.getElementById("ragdb-model");
  var sourcesSection = document.getElementById("ragdb-sources-section");
  var sourcesList = document.getElementById("ragdb-sources");
  var answerUrl = form.getAttribute("data-answer-url");

  var sources = [];
  var answerText = "";

  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.className = isError ? "ragdb-status ragdb-error" : "ragdb-status";
  }

  function sourceLabel(source) {
    return source.file_path + ":" + source.start_line + "-" + source.end_line;
  }

  // The answer with each [n] turned into a link to the cited chunk's row in Datasette.
  function renderAnswer() {
    answerBox.textContent = "";
    var parts = answerText.split(/(\[\d{1,3}\])/);
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i];
      var match = /^\[(\d{1,3})\]$/.exec(part);
      var source = match ? sources[Number(match[1]) - 1] : null;
      if (source && source.url) {
        var link = document.createElement("a");
        link.href = source.url;
        link.className = "ragdb-citation";
        link.textContent = part;
        link.title = sourceLabel(source);
        answerBox.appendChild(link);
      } else if (part) {
        answerBox.appendChild(document.createTextNode(part));
      }
    }
  }

  function renderSources(cited) {
    sourcesList.textContent = "";
    sourcesSection.hidden = sources.length === 0;
    for (var i = 0; i < sources.length; i++) {
      var source = sources[i];
      var item = document.createElement("li");
      item.id = "ragdb-source-" + source.n;
      var link = document.createElement(source.url ? "a" : "span");
      if (source.url) {
        link.href = source.url;
      }
      link.className = "ragdb-source-link";
      link.textContent = "[" + source.n + "] " + sourceLabel(source);
      item.appendChild(link);
      if (cited && cited.indexOf(source.n) >= 0) {
        item.className = "ragdb-cited";
        var badge = document.createElement("span");
        badge.className = "ragdb-badge";
        badge.textContent = "cited";
        item.appendChild(badge);
      }
      var pre = document.createElement("pre");
      var code = document.createElement("code");
      code.textContent = source.text || source.preview || "";
      pre.appendChild(code);
      item.appendChild(pre);
      sourcesList.appendChild(item);
    }
  }

  // What the claim check did to a written answer (null for passages of the sources).
  function checkSummary(check) {
    if (!check) {
      return "";
    }
    var dropped = (check.dropped || []).length;
    var line = " Checked " + check.sentences + " written sentences against their sources: " +
      check.kept + " kept, " + dropped + " dropped";
    if (check.replaced_code && check.replaced_code.length) {
      line += ", " + check.replaced_code.length + " code replaced by the source's lines";
    }
    if (check.recited && check.recited.length) {
      line += ", " + check.recited.length + " cited to the given source that says it";
    }
    if (check.evidence_from && check.evidence_from.length) {
      line += ", followed by the passages it was written from";
    }
    if (check.stopped_at_time_limit) {
      line += "; the writer was stopped at its time limit";
    }
    if (check.fallback) {
      line += "; the " + check.writer + " answer was not shown (" +
        (check.fallback_reason || "too little survived") +
        "), so these are passages of the sources";
    }
    return line + ".";
  }

  function handleEvent(name, data) {
    if (name === "sources") {
      sources = data;
      renderSources([]);
      setStatus(sources.length ? "Generating an answer from " + sources.length +
                " sources\u2026" : "No sources found.", false);
    } else if (name === "token") {
      answerText += data.text;
      renderAnswer();
    } else if (name === "done") {
      sources = data.sources;
      answerText = data.answer;
      renderAnswer();
      renderSources(data.cited);
      answerBox.setAttribute("data-state", "done");
      modelLine.textContent = (data.model ? "Answered by " + data.model + " in " +
        data.timings.total_s + " s." : "") + checkSummary(data.check);
      setStatus("", false);
    } else if (name === "error") {
      answerBox.setAttribute("data-state", "error");
      setStatus(data.error, true);
    }
  }

  function parseBlock(block) {
    var name = "message";
    var data = [];
    var lines = block.split("\n");
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      if (line.indexOf("event:") === 0) {
        name = line.slice(6).trim();
      } else if (line.indexOf("data:") === 0) {
        data.push(line.slice(5).replace(/^ /, ""));
      }
    }
    if (data.length) {
      handleEvent(name, JSON.parse(data.join("\n")));
    }
  }

  async function ask(q, k) {
    sources = [];
    answerText = "";
    answerBox.textContent = "";
    modelLine.textContent = "";
    renderSources([]);
    answerSection.hidden = false;
    answerBox.setAttribute("data-state", "streaming");
    setStatus("Searching\u2026", false);
    var response = await fetch(answerUrl + "?stream=1", {
      method: "POST",
      headers: {"Content-Type": "application/json", "Accept": "text/event-stream"},
      body: JSON.stringify({q: q, k: k}),
    });
    if (!response.ok) {
      var message = response.status + " " + response.statusText;
      try {
        message = (await response.json()).error || message;
      } catch (ignored) {
        // not JSON: keep the status line
      }
      answerBox.setAttribute("data-state", "error");
      setStatus(message, true);
      return;
    }
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) {
        break;
      }
      buffer += decoder.decode(chunk.value, {stream: true});
      var cut = buffer.indexOf("\n\n");
      while (cut >= 0) {
        parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        cut = buffer.indexOf("\n\n");
      }
    }
    if (answerBox.getAttribute("data-state") === "streaming") {
      answerBox.setAttribute("data-state", "error");
      setStatus("The answer stopped before it was complete.", true);
    }
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var q = question.value.trim();
    if (!q) {
      setStatus("Type a question first.", true);
      return;
    }
    button.disabled = true;
    ask(q, Number(kInput.value) || 5).catch(function (error) {
      answerBox.setAttribute("data-state", "error");
      setStatus("Request failed: " + error, true);
    }).finally(function () {
      button.disabled = false;
    });
  });

  if (question.value.trim()) {  // /-/ragdb/ask?q=... asks at once
    form.requestSubmit();
  }
})();
