/* psyq questionnaire (psyq's own; MIT, as psyq).

   Builds a jsPsych timeline from the questionnaire psyq wrote into index.html (the JSON block
   #psyq-questionnaire) and, at the end, saves the person's answers as one row of jsPsych's own CSV
   (DataCollection.csv): the respondent id, the order of the options they saw, the order of the
   items when the study shuffles them, one column per item holding the value on the instrument's
   scale (empty when left unanswered), and one column per demographic question.

   jsPsych's survey plugins put prompts, labels and options into the page as HTML, so every text
   of the questionnaire is escaped here first: an item text is always shown as text, never run or
   rendered as markup.

   Query parameters: respondent_id (else PROLIFIC_PID, else a random id) and option_order
   (as_written or reversed, when the study counterbalances; else drawn at random). A hosting
   service's own save call replaces the download: define window.psyqSave(csv, fileName) before
   this script (docs/asking-people.md shows JATOS's). */
(function () {
  "use strict";

  var spec = JSON.parse(document.getElementById("psyq-questionnaire").textContent);
  var params = new URLSearchParams(window.location.search);

  function asText(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  function block(value) {
    // white-space: pre-line keeps the line breaks of the instructions without any markup in them
    return '<div class="psyq-text">' + asText(value) + "</div>";
  }

  var jsPsych = initJsPsych({ on_finish: save });
  var respondent = params.get("respondent_id") || params.get("PROLIFIC_PID") || jsPsych.randomization.randomID(12);
  var asked = params.get("option_order");
  var order = spec.option_orders.indexOf(asked) >= 0 ? asked
    : jsPsych.randomization.sampleWithoutReplacement(spec.option_orders, 1)[0];

  // The row of answers, its columns in a fixed order (every person's file has the same header).
  var record = {};
  record[spec.respondent_column] = respondent;
  record[spec.order_column] = order;
  spec.parts.forEach(function (part) {
    if (part.item_order === "shuffled") { record[part.item_order_column] = ""; }
    part.items.forEach(function (item) { record[item.column] = ""; });
  });
  spec.demographics.forEach(function (d) { record[d.column] = ""; });

  function likert(part, items, choices) {
    return {
      type: jsPsychSurveyLikert,
      preamble: block(part.instructions),
      questions: items.map(function (item) {
        return { prompt: asText(item.prompt), labels: choices.map(function (c) { return asText(c.label); }),
                 name: item.column, required: false };
      }),
      button_label: spec.button_label,
      data: { psyq_instrument: part.instrument },
      on_finish: function (data) {
        Object.keys(data.response).forEach(function (column) {
          var index = data.response[column];
          record[column] = index === "" ? "" : choices[index].value;
        });
      }
    };
  }

  var timeline = [];
  spec.parts.forEach(function (part) {
    var choices = order === "reversed" ? part.choices.slice().reverse() : part.choices;
    var items = part.item_order === "shuffled" ? jsPsych.randomization.shuffle(part.items) : part.items;
    if (part.item_order === "shuffled") {
      record[part.item_order_column] = items.map(function (item) { return item.id; }).join(" ");
    }
    if (part.matrix) {
      timeline.push(likert(part, items, choices));
    } else {
      items.forEach(function (item) { timeline.push(likert(part, [item], choices)); });
    }
  });

  var categorical = spec.demographics.filter(function (d) { return d.categories; });
  var numeric = spec.demographics.filter(function (d) { return !d.categories; });
  if (categorical.length) {
    timeline.push({
      type: jsPsychSurveyMultiChoice,
      questions: categorical.map(function (d) {
        return { prompt: asText(d.question), options: d.categories.map(asText), name: d.column, required: false };
      }),
      button_label: spec.button_label,
      on_finish: function (data) {
        // the option's value attribute, decoded by the browser: the category as written
        Object.keys(data.response).forEach(function (column) { record[column] = data.response[column] || ""; });
      }
    });
  }
  if (numeric.length) {
    timeline.push({
      type: jsPsychSurveyText,
      questions: numeric.map(function (d) {
        return { prompt: asText(d.question + " (" + d.hint + ")"), name: d.column, required: false };
      }),
      button_label: spec.button_label,
      on_finish: function (data) {
        Object.keys(data.response).forEach(function (column) { record[column] = String(data.response[column]).trim(); });
      }
    });
  }

  function save() {
    var answers = jsPsych.data.get().filterCustom(function () { return false; }).push(record);
    var fileName = spec.file_stem + "_" + String(respondent).replace(/[^A-Za-z0-9_.-]/g, "_") + ".csv";
    if (typeof window.psyqSave === "function") {
      window.psyqSave(answers.csv(), fileName);
    } else {
      answers.localSave("csv", fileName);
    }
    var done = jsPsych.getDisplayElement();
    done.textContent = spec.thanks + " " + fileName;
    done.setAttribute("data-psyq-saved", fileName);
  }

  jsPsych.run(timeline);
})();
