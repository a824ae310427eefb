"""Grounded answers with citations, generated locally through OpenVINO GenAI.

The retrieval side hands us numbered source texts; `prompt` fits them into the model's context
(measured with the model's own tokenizer), `generator` runs the model, `cleaning` removes think
blocks, repetition loops and citations that name no source, and `models` finds the weights.
Nothing here imports the database or retrieval layers: sources arrive as texts.
"""
