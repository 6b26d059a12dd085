import FlowdirCore
import FlowdirTemplates

/// Every backend this flowdir has, one line each: what a tool's
/// `run.<key>` may name (ARCHITECTURE.md, "Adding a backend").
public enum Backends {
    public static let all: [any Backend] = [
        JobAPIBackend(),
        SlurmBackend(),
        SSHBackend(),
    ]

    public static func named(_ key: String) -> (any Backend)? { all.first { $0.key == key } }
}

// Reading tools and the config with every backend above.

extension TemplateLoader {
    public init(fileSystem: any FileSystem, userToolDirectories: [String] = []) {
        self.init(fileSystem: fileSystem, userToolDirectories: userToolDirectories, backends: Backends.all)
    }
}

extension ToolCatalog {
    public convenience init(searchPath: [String], fileSystem: any FileSystem) {
        self.init(searchPath: searchPath, fileSystem: fileSystem, backends: Backends.all)
    }
}

extension ConfigDecoder {
    public static func decode(_ bytes: [UInt8], file: String, home: String) -> Result<FlowdirConfig, Diagnostic> {
        decode(bytes, file: file, home: home, backends: Backends.all)
    }
}
