// An instance.yaml as a person or a sync may leave it: read, written back, read again.
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/DocumentChecks.swift
// fuzz-seeds: Tests/FlowdirIOTests/Fixtures/instance-v0/instance.yaml docs:yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let file = "my-photo/instance.yaml"
    DocumentChecks.flatAgreesWithFull(bytes, file: file)
    guard case .success(let doc) = InstanceCodec.document(bytes, file: file),
          let record = try? InstanceCodec.decodeInstance(doc, file: file) else { return 0 }
    let text = InstanceCodec.encode(record)
    guard case .success(let doc2) = InstanceCodec.document(Array(text.utf8), file: file) else {
        require(false, "an instance.yaml flowdir wrote does not read back: \(quoted(text))")
        return 0
    }
    do {
        let back = try InstanceCodec.decodeInstance(doc2, file: file)
        require(InstanceCodec.encode(back) == text, "an instance.yaml reads back otherwise: \(quoted(text))")
        require(back.id == record.id && back.title == record.title && back.template == record.template
                && back.schemaVersion == record.schemaVersion && back.lease?.host == record.lease?.host,
                "an instance.yaml's fields change when written: \(quoted(text))")
    } catch {
        require(false, "an instance.yaml flowdir wrote is refused: \(error.message): \(quoted(text))")
    }
    return 0
}
