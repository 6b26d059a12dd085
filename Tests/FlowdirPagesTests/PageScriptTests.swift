@testable import FlowdirPages
import FlowdirTestSupport
import Foundation
import Testing

/// The page files (`Sources/FlowdirPages/Pages/`) as the binary serves
/// them, and their scripts parse (`node --check`, as `scripts/check-pages.sh`
/// runs in the test command).
@Suite(.tags(.medium)) struct PageScriptTests {
    static let folder = RepositoryPaths.root + "/Sources/FlowdirPages/Pages"

    static func files(_ suffixes: [String]) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { name in suffixes.contains { name.hasSuffix($0) } }
            .sorted()
    }

    /// Debian's `node`, wherever PATH has it.
    static var node: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/node" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func everyPageScriptParses() throws {
        guard let node = Self.node else {
            Issue.record("node is not installed: get it with `apt-get install nodejs` (`bash scripts/setup.sh` installs it)")
            return
        }
        let scripts = try Self.files([".js"])
        #expect(scripts.count >= 4, "the page scripts are in \(Self.folder)")
        for name in scripts {
            let r = try CommandRunner.run(node, ["--check", Self.folder + "/" + name])
            // node says the file and line, the line, and the error.
            #expect(r.status == 0, "\(name) does not parse:\n\(r.stderr.split(separator: "\n").prefix(5).joined(separator: "\n"))")
        }
    }

    /// What is served is each file exactly, at its name (`index.html` at
    /// `/`), with its type: the plugin embedded them all, and as they are now.
    @Test func theServedPagesAreThePageFilesByteForByte() throws {
        let names = try Self.files([".html", ".css", ".js"])
        #expect(Set(UIAssets.all.keys) == Set(names.map { $0 == "index.html" ? "/" : "/" + $0 }))
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.folder + "/" + name)))
            let asset = UIAssets.all[name == "index.html" ? "/" : "/" + name]
            #expect(asset?.bytes == bytes, "\(name) is served as it was when last built: build again")
            let type = name.hasSuffix(".js") ? "text/javascript" : name.hasSuffix(".css") ? "text/css" : "text/html"
            #expect(asset?.contentType == type + "; charset=utf-8")
        }
    }
}
