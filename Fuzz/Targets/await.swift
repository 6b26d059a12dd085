// An await file (inbox/<node>.await.yaml) as a person or a sync may leave it: read, written back, read again.
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/DocumentChecks.swift
// fuzz-seeds: docs:yaml Tests/FlowdirIOTests/Fixtures/instance-v0/nodes/*/state.yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let file = "inbox/mask1.await.yaml"
    DocumentChecks.flatAgreesWithFull(bytes, file: file)
    guard case .success(let a) = AwaitCodec.decode(bytes, file: file) else { return 0 }
    // What flowdir writes of it reads back as it, and writes the same again.
    let text = AwaitCodec.encode(a, instanceName: "my-photo")
    guard case .success(let back) = AwaitCodec.decode(Array(text.utf8), file: file) else {
        require(false, "an await file flowdir wrote does not read back: \(quoted(text, limit: 600))")
        return 0
    }
    require(AwaitCodec.encode(back, instanceName: "my-photo") == text, "an await file reads back otherwise: \(quoted(text, limit: 600))")
    require(back.id == a.id && back.node == a.node && back.type == a.type && back.title == a.title && back.expects == a.expects
            && back.choices == a.choices && back.context == a.context && back.answer.map { v in a.answer.map { same(v, $0) } ?? false } ?? (a.answer == nil),
            "an await file's fields change when written: \(quoted(text, limit: 600))")
    // The requests a person makes of it, as the engine carries them out.
    let now = Timestamp(seconds: 1_790_000_000)
    for result in [AwaitPolicy.snooze(a, now: now), AwaitPolicy.claim(a, by: "Ada <ada@example.org>", now: now),
                   AwaitPolicy.release(a, by: "Ada <ada@example.org>", now: now)] {
        if case .success(let next) = result { _ = AwaitCodec.encode(next, instanceName: "my-photo") }
    }
    _ = AwaitPolicy.isExpired(a, now: now)
    _ = AwaitPolicy.section(a, now: now)
    _ = AwaitPolicy.ageLine(a, now: now)
    return 0
}
