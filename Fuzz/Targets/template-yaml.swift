// A template in YAML, through the whole load and what follows it (Fuzz/Support/TemplateChecks.swift).
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-sources: Fuzz/Support/Values.swift Fuzz/Support/TemplateChecks.swift Sources/FlowdirTestSupport/InMemoryFileSystem.swift Sources/FlowdirTestSupport/LoadedDescription.swift
// fuzz-seeds: workflows/*.yaml workflows/*.yml examples/*.yaml Tests/FlowdirTemplatesTests/Fixtures/invalid/*.yaml Tests/FlowdirIOTests/Fixtures/instance-v0/workflow.yaml docs:yaml
// fuzz-dict: yaml
import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    TemplateChecks.check(fuzzBytes(data, size), format: .yaml)
    return 0
}
