"""Importers: other tools' files -> partdsl's typed IR (a Graph), below the language,
which reads them through `import "file" as FORMAT` (importers/formats.py lists them):
ONNX (onnx_import, onnx_ops), torch.export (torch_export), dnn-partitioning and graph
JSON (graph_formats), REGAL (regal_import), Metis profiles (metis_profile); the analytic
cost model and its device profiles (cost_model, device_profiles.json), memory models
(memory_model); reading files with limits (import_text) and the import options."""
