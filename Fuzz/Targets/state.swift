// A node's state.yaml as a person or a sync may leave it: read, written back, read again.
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/DocumentChecks.swift
// fuzz-seeds: Tests/FlowdirIOTests/Fixtures/instance-v0/nodes/*/*.yaml docs:yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let file = "nodes/a/state.yaml"
    DocumentChecks.flatAgreesWithFull(bytes, file: file)
    guard case .success(let doc) = InstanceCodec.document(bytes, file: file),
          let record = try? InstanceCodec.decodeState(doc, file: file) else { return 0 }
    let text = InstanceCodec.encode(record)
    guard case .success(let doc2) = InstanceCodec.document(Array(text.utf8), file: file) else {
        require(false, "a state.yaml flowdir wrote does not read back: \(quoted(text))")
        return 0
    }
    do {
        let back = try InstanceCodec.decodeState(doc2, file: file)
        require(InstanceCodec.encode(back) == text, "a state.yaml reads back otherwise: \(quoted(text))")
        require(back.state == record.state && back.run == record.run && back.job == record.job && back.note == record.note,
                "a state.yaml's fields change when written: \(quoted(text))")
        // The entries form (what a commit of several nodes writes) reads the same too.
        let entries = YAMLWriter.document(InstanceCodec.encodeEntries(record))
        guard case .success(let doc3) = InstanceCodec.document(Array(entries.utf8), file: file) else {
            require(false, "a state.yaml's entries do not read back: \(quoted(entries))")
            return 0
        }
        require(InstanceCodec.encode(try InstanceCodec.decodeState(doc3, file: file)) == text, "a state.yaml's entries read back otherwise")
    } catch {
        require(false, "a state.yaml flowdir wrote is refused: \(error.message): \(quoted(text))")
    }
    return 0
}
