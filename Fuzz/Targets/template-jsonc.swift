// A template in JSONC, through the whole load and what follows it (Fuzz/Support/TemplateChecks.swift).
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/TemplateChecks.swift Sources/FlowdirTestSupport/InMemoryFileSystem.swift Sources/FlowdirTestSupport/LoadedDescription.swift
// fuzz-seeds: workflows/*.jsonc workflows/*.json Tests/FlowdirTemplatesTests/Fixtures/invalid/*.json Tests/FlowdirTemplatesTests/Fixtures/invalid/*.jsonc
// fuzz-dict: json
import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    TemplateChecks.check(fuzzBytes(data, size), format: .jsonc)
    return 0
}
