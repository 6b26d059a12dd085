import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport

/// The fixture corpus, mirrored into memory under stable relative paths so
/// rendered output does not depend on where the checkout lives.
enum Fixtures {
    static let directory = RepositoryPaths.root + "/Tests/FlowdirTemplatesTests/Fixtures"

    static let invalidNames: [String] = {
        let names = (try? LocalFileSystem().listDirectory(directory + "/invalid")) ?? []
        return names.filter { ["yaml", "json", "jsonc"].contains(Path.fileExtension($0)) }
    }()

    static let fileSystem: InMemoryFileSystem = {
        let real = LocalFileSystem()
        let fs = InMemoryFileSystem()
        for sub in ["invalid", "invalid/tools"] {
            for name in (try? real.listDirectory(directory + "/" + sub)) ?? [] {
                let path = directory + "/" + sub + "/" + name
                if real.isRegularFile(path), let bytes = try? real.readFile(path, limit: 1 << 20) {
                    fs.write(sub + "/" + name, bytes: bytes)
                }
            }
        }
        return fs
    }()

    static func load(_ name: String) -> LoadedTemplate {
        TemplateLoader(fileSystem: fileSystem).load(path: "invalid/" + name)
    }

    /// The codes a fixture says it must produce: its first line
    /// (`# expect: a, b` or `// expect: a`), or a `<name>.expect` beside it.
    static func expectedCodes(_ name: String) -> [String]? {
        let text = (try? fileSystem.readFile("invalid/" + name, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let sidecar = (try? fileSystem.readFile("invalid/" + name + ".expect", limit: 4096)).map { String(decoding: $0, as: UTF8.self) }
        let first = sidecar ?? String(text.prefix { $0 != "\n" })
        guard let range = first.range(of: "expect:") else { return nil }
        return first[range.upperBound...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.sorted()
    }

    static func rendered(_ result: LoadedTemplate) -> String {
        DiagnosticRenderer(sources: result.sources).render(result.diagnostics.sortedByLocation()) + "\n"
    }
}

import Foundation
