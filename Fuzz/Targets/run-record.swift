// A run.yaml (nodes/<id>/runs/<n>/run.yaml) as a person or a sync may leave it: the fast
// line reader against the full one, then read, written back, read again.
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/DocumentChecks.swift
// fuzz-seeds: docs:yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let file = "nodes/a/runs/1/run.yaml"
    // RunRecordLines' promise: whatever it returns, the YAML way returns too.
    if let fast = RunRecordLines.decode(bytes) {
        guard case .success(let full) = RunRecordCodec.decodeDocument(bytes, file: file) else {
            require(false, "RunRecordLines reads a run.yaml the YAML reader refuses")
            return 0
        }
        require(fast == full, "RunRecordLines reads another record than the YAML reader")
    }
    guard case .success(let record) = RunRecordCodec.decode(bytes, file: file) else { return 0 }
    let text = RunRecordCodec.encode(record)
    require(RunRecordCodec.encodeBytes(record) == Array(text.utf8), "encode and encodeBytes differ")
    guard case .success(let back) = RunRecordCodec.decode(Array(text.utf8), file: file) else {
        require(false, "a run.yaml flowdir wrote does not read back: \(quoted(text, limit: 600))")
        return 0
    }
    require(RunRecordCodec.encode(back) == text, "a run.yaml reads back otherwise: \(quoted(text, limit: 600))")
    require(back.run == record.run && back.node == record.node && back.inputs == record.inputs && back.outputs == record.outputs
            && back.command == record.command && back.exitCode == record.exitCode && back.error == record.error && same(back.params, record.params),
            "a run.yaml's fields change when written: \(quoted(text, limit: 600))")
    // Both readers of what flowdir writes agree too.
    if let fast = RunRecordLines.decode(Array(text.utf8)) { require(fast == back, "RunRecordLines reads a written run.yaml otherwise") }
    return 0
}
