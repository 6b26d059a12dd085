// The config (~/.config/flowdir/config.yaml): what it accepts is within bounds (numbers from
// outside are parsed with bounds, docs/security.md): durations finite, above 0 and usable as an
// offset from now; sizes and counts in range. A backend's own section (`slurm:`) is checked by
// that backend, in FlowdirIO, which this target does not build.
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/DocumentChecks.swift
// fuzz-seeds: docs:yaml
// fuzz-dict: yaml
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    DocumentChecks.flatAgreesWithFull(bytes, file: "config.yaml")
    guard case .success(let c) = ConfigDecoder.decode(bytes, file: "config.yaml", home: "/home/ada", backends: []) else { return 0 }
    // A duration is used as an offset from now (a lease's end is now + `sync.lease`): it must be one.
    func finite(_ seconds: Double, _ what: String) {
        require(seconds.isFinite && seconds > 0, "the config accepts \(what) = \(seconds)")
        require(1_790_000_000 + seconds < 0x1p63, "the config accepts \(what) = \(seconds) s, beyond any date from now")
    }
    finite(c.hookTimeout, "hookTimeout")
    finite(c.leaseDuration, "sync.lease")
    if let every = c.syncEvery { finite(every, "sync.every") }
    require(c.answerSizeLimit > 0, "the config accepts answerSizeLimit = \(c.answerSizeLimit)")
    require((c.localConcurrency ?? 1) >= 1 && (c.remoteConcurrency ?? 1) >= 1, "the config accepts a concurrency below 1")
    for (name, e) in c.endpoints {
        finite(e.pollInterval, "endpoints.\(name).pollInterval")
        finite(e.firstBackoff, "endpoints.\(name).firstBackoff")
        finite(e.maxBackoff, "endpoints.\(name).maxBackoff")
        finite(e.requestTimeout, "endpoints.\(name).requestTimeout")
        require(e.retryDelays.allSatisfy { $0.isFinite && $0 >= 0 }, "the config accepts endpoints.\(name).retryDelays = \(e.retryDelays)")
        require(e.delayScale.isFinite && e.delayScale > 0, "the config accepts endpoints.\(name).delayScale = \(e.delayScale)")
        require(e.inlineLimit >= 0 && e.maxRequestsPerMinute >= 1, "the config accepts endpoints.\(name) limits out of range")
    }
    return 0
}
