import FlowdirCore
@testable import FlowdirTemplates

/// Checks shared by the harnesses of flowdir's own files (state.yaml,
/// instance.yaml, await and request files, run.yaml).
enum DocumentChecks {
    /// `FlatYAML` reads the plainest files by hand; whatever it returns, the
    /// YAML reader returns too, key locations included (its promise).
    static func flatAgreesWithFull(_ bytes: [UInt8], file: String) {
        guard let flat = FlatYAML.parse(bytes, file: file) else { return }
        guard case .success(let full) = InstanceCodec.fullDocument(bytes, file: file) else {
            require(false, "FlatYAML reads a file the YAML reader refuses")
            return
        }
        require(same(flat, full), "FlatYAML reads other values than the YAML reader")
        require(flat.map(\.location) == full.map(\.location), "FlatYAML puts keys elsewhere than the YAML reader")
    }
}
