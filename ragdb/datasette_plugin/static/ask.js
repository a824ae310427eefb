// ragdb's question page: POST the question to /-/ragdb/answer?stream=1 and read the
// server-sent events with fetch + a ReadableStream reader (EventSource cannot POST).
// Everything from the server is inserted as text, never as HTML; the answer's Markdown is
// built as DOM nodes (renderMarkdown).
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

  // A path on one line, as ragdb shows it everywhere (input_rules.one_line): a character that
  // is not printable (a newline, an escape in a file name) escaped as \n, \u001b. The path
  // itself (file_path, what links and the API carry) is untouched.
  var NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"};
  var UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/gu;

  function oneLine(text) {
    return String(text).replace(UNPRINTABLE, function (c) {
      if (NAMED_ESCAPES[c]) {
        return NAMED_ESCAPES[c];
      }
      var code = c.codePointAt(0);
      var hex = code.toString(16);
      return code < 0x10000 ? "\\u" + ("0000" + hex).slice(-4)
                            : "\\U" + ("00000000" + hex).slice(-8);
    });
  }

  function sourceLabel(source) {
    return oneLine(source.file_path) + ":" + source.start_line + "-" + source.end_line;
  }

  // The answer as Markdown, built as DOM nodes (never innerHTML): fenced code in monospace
  // with its language, lists, tables, quotes and paragraphs; [n] and `path:start-end` linked
  // to the cited chunk. A fence still open while streaming is shown as code so far.
  var LANGUAGES = {py: "python", rs: "rust", go: "go", ts: "typescript", tsx: "tsx",
    js: "javascript", mjs: "javascript", c: "c", h: "c", cc: "cpp", cpp: "cpp", hpp: "cpp",
    java: "java", rb: "ruby", sh: "shell", md: "markdown", rst: "rst", toml: "toml",
    yaml: "yaml", yml: "yaml", json: "json", cu: "cuda", sql: "sql", php: "php", cs: "csharp",
    kt: "kotlin", swift: "swift", scala: "scala", lua: "lua", zig: "zig", dart: "dart"};

  function languageOf(path) {
    var dot = path ? path.lastIndexOf(".") : -1;
    return dot >= 0 ? (LANGUAGES[path.slice(dot + 1).toLowerCase()] || "") : "";
  }

  // The cited source a `path:start-end` names: the one of that file whose lines overlap.
  function sourceAt(path, start, end) {
    for (var i = 0; i < sources.length; i++) {
      var s = sources[i];
      if (oneLine(s.file_path) === path && s.start_line <= end && start <= s.end_line) {
        return s;
      }
    }
    return null;
  }

  function link(text, source, className) {
    var a = document.createElement("a");
    a.href = source.url;
    a.className = className;
    a.textContent = text;
    a.title = sourceLabel(source);
    return a;
  }

  // Inline Markdown: `code` (a path:start-end one linked), **bold**, [n] citations.
  function appendInline(parent, text) {
    var parts = text.split(/(`[^`\n]+`|\*\*[^*\n]+\*\*|\[\d{1,3}\])/);
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i];
      if (!part) {
        continue;
      }
      var cite = /^\[(\d{1,3})\]$/.exec(part);
      if (cite) {
        var source = sources[Number(cite[1]) - 1];
        parent.appendChild(source && source.url ? link(part, source, "ragdb-citation")
                                                : document.createTextNode(part));
      } else if (part.charAt(0) === "`" && part.length > 2) {
        var inner = part.slice(1, -1);
        var place = /^(.+):(\d+)-(\d+)$/.exec(inner);
        var at = place ? sourceAt(place[1], Number(place[2]), Number(place[3])) : null;
        var code = document.createElement("code");
        code.textContent = inner;
        if (at && at.url) {
          var a = link("", at, "ragdb-place");
          a.appendChild(code);
          parent.appendChild(a);
        } else {
          parent.appendChild(code);
        }
      } else if (part.indexOf("**") === 0 && part.length > 4) {
        var strong = document.createElement("strong");
        strong.textContent = part.slice(2, -2);
        parent.appendChild(strong);
      } else {
        parent.appendChild(document.createTextNode(part));
      }
    }
  }

  function codeBlock(lines, language) {
    var pre = document.createElement("pre");
    pre.className = "ragdb-code-block";
    if (language) {
      pre.setAttribute("data-language", language);
      var tag = document.createElement("span");
      tag.className = "ragdb-lang";
      tag.textContent = language;
      pre.appendChild(tag);
    }
    var code = document.createElement("code");
    if (language) {
      code.className = "language-" + language;
    }
    code.textContent = lines.join("\n");
    pre.appendChild(code);
    return pre;
  }

  var ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;

  function renderMarkdown(box, text) {
    var lines = text.split("\n");
    var lastPath = "";
    var paragraph = [];
    var list = null;
    function flush() {
      if (paragraph.length) {
        var p = document.createElement("p");
        appendInline(p, paragraph.join(" "));
        box.appendChild(p);
        paragraph = [];
      }
    }
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      var named = /`([^`\s]+?)(?::\d+-\d+)?`/.exec(line);
      if (named && !/^\s*(```|~~~)/.test(line)) {
        lastPath = named[1];
      }
      var fence = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line);
      if (fence) {
        flush();
        list = null;
        var body = [];
        var j = i + 1;
        while (j < lines.length && lines[j].trim().indexOf(fence[1]) !== 0) {
          body.push(lines[j]);
          j++;
        }
        box.appendChild(codeBlock(body, fence[2] || languageOf(lastPath)));
        i = j;
        continue;
      }
      var item = ITEM.exec(line);
      if (item && !/^\s*\|/.test(line)) {
        flush();
        var ordered = /\d/.test(item[1]);
        if (!list || list.ordered !== ordered) {
          list = {ordered: ordered, node: document.createElement(ordered ? "ol" : "ul")};
          if (ordered) {
            list.node.start = parseInt(item[1], 10);
          }
          box.appendChild(list.node);
        }
        var li = document.createElement("li");
        appendInline(li, item[2]);
        list.node.appendChild(li);
        continue;
      }
      if (/^\s*\|.*\|\s*$/.test(line)) {
        flush();
        list = null;
        var table = document.createElement("table");
        table.className = "ragdb-table";
        for (; i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i]); i++) {
          if (/^\s*\|[\s:|-]+\|\s*$/.test(lines[i])) {
            continue;  // the header's separator row
          }
          var row = document.createElement("tr");
          var cells = lines[i].trim().slice(1, -1).split("|");
          for (var c = 0; c < cells.length; c++) {
            var cell = document.createElement(table.rows.length ? "td" : "th");
            appendInline(cell, cells[c].trim());
            row.appendChild(cell);
          }
          table.appendChild(row);
        }
        i--;
        box.appendChild(table);
        continue;
      }
      var heading = /^(#{1,6})\s+(.*)$/.exec(line);
      var quote = /^>\s?(.*)$/.exec(line);
      if (heading || quote) {
        flush();
        list = null;
        var node = document.createElement(heading ? "h" + Math.min(6, heading[1].length + 3)
                                                  : "blockquote");
        appendInline(node, heading ? heading[2] : quote[1]);
        box.appendChild(node);
        continue;
      }
      if (!line.trim()) {
        flush();
        list = null;
        continue;
      }
      if (list && /^\s+\S/.test(line)) {
        appendInline(list.node.lastChild, " " + line.trim());  // an item's next line
        continue;
      }
      list = null;
      paragraph.push(line.trim());
    }
    flush();
  }

  function renderAnswer() {
    answerBox.textContent = "";
    renderMarkdown(answerBox, answerText);
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

  // What the claim check did to a written answer (null for the blocks alone).
  function checkSummary(check) {
    if (!check) {
      return "";
    }
    var dropped = (check.dropped || []).length;
    var line = " Checked " + check.sentences + " written sentences against their sources: " +
      check.kept + " kept, " + dropped + " dropped";
    if (check.recited && check.recited.length) {
      line += ", " + check.recited.length + " cited to the given source that says it";
    }
    if (check.evidence_from && check.evidence_from.length) {
      line += ", followed by the blocks it was written from";
    }
    if (check.stopped_at_time_limit) {
      line += "; the writer was stopped at its time limit";
    }
    if (check.fallback) {
      line += "; the " + check.writer + " answer was not shown (" +
        (check.fallback_reason || "too little survived") +
        "), so these are the blocks of the sources alone";
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
