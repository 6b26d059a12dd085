// A request file (.flowdir/requests/<id>.request.yaml, from `flowdir snooze`, `answer`, `retry`…
// in another terminal) as anything may leave it: read, written back, read again, and a snooze
// carried out on an await as the engine does (Runtime's Requests.carryOut).
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/DocumentChecks.swift Sources/FlowdirIO/Instance/PersonRequest.swift Sources/FlowdirIO/RandomID.swift
// fuzz-seeds: docs:yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

let asked = AwaitRecord(id: "e2d819f6-b479-47ef-aca5-8cd4dd83f6e9", node: "mask1", type: .drawMask, title: "Draw a mask", detail: nil,
                        urgency: .normal, createdAt: Timestamp(seconds: 1_790_000_000), expiresAt: nil, onTimeout: .cancel,
                        link: "flowdir://x/node/mask1")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let file = ".flowdir/requests/r1.request.yaml"
    DocumentChecks.flatAgreesWithFull(bytes, file: file)
    guard case .success(let r) = PersonRequest.decode(bytes, id: "r1", file: file, defaultBy: "ada") else { return 0 }
    let text = r.fileText
    guard case .success(let back) = PersonRequest.decode(Array(text.utf8), id: "r1", file: file, defaultBy: "someone else") else {
        require(false, "a request file flowdir wrote does not read back: \(quoted(text))")
        return 0
    }
    require(back.fileText == text, "a request file reads back otherwise: \(quoted(text))")
    require(back.verb == r.verb && back.node == r.node && back.by == r.by && back.files == r.files && back.force == r.force
            && same(back.params, r.params), "a request's fields change when written: \(quoted(text))")
    if r.verb == .snooze, case .success(let next) = AwaitPolicy.snooze(asked, for: r.duration, now: Timestamp(seconds: 1_790_000_000)) {
        _ = AwaitCodec.encode(next, instanceName: "my-photo")
    }
    return 0
}
