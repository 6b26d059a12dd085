import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir-embed`, which the EmbedPages plugin runs at build time: the
/// Swift it writes, compiled by swiftc, gives back each file's bytes
/// exactly, whatever quotes, `#`s, backslashes or control characters the
/// file holds.
@Suite(.tags(.medium)) struct EmbedToolTests {
    static var tool: String { RepositoryPaths.productsDirectory + "/flowdir-embed" }

    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func anyTextComesBackByteForByte() throws {
        guard let swiftc = Self.onPath("swiftc") else {
            Issue.record("swiftc is not on PATH: install Swift 6 (swift.org) and put its usr/bin on PATH")
            return
        }
        let dir = try TemporaryDirectory()
        let texts = [
            // What could end a raw literal, start an escape or an interpolation, or be turned into something else.
            "tricky.js": "a\r\nb\u{1}\"##\\#(x) \"\"\"# \\###\tz\u{7F}\r é 😀\n  \n\\\n",
            "empty.css": "",
            "newline.html": "\n",
            "indented.js": "    x\n  \"\"\"#\n",
        ]
        try FileManager.default.createDirectory(atPath: dir.path + "/in", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.path + "/out", withIntermediateDirectories: true)
        for (name, text) in texts { try dir.write("in/" + name, text) }
        let made = try CommandRunner.run(Self.tool, [dir.path + "/PageFiles.swift"] + texts.keys.sorted().map { dir.path + "/in/" + $0 })
        #expect(made.status == 0, "\(made.stderr)")
        // Writes each embedded text back out, by its name.
        try dir.write("main.swift", """
            import Glibc
            for file in PageFiles.all {
                let f = fopen(CommandLine.arguments[1] + "/" + file.name, "wb")!
                let bytes = Array(file.text.utf8)
                _ = fwrite(bytes, 1, bytes.count, f)
                fclose(f)
            }
            """)
        let built = try CommandRunner.run(swiftc, ["-swift-version", "6", "-o", dir.path + "/roundtrip", dir.path + "/PageFiles.swift", dir.path + "/main.swift"])
        #expect(built.status == 0, "\(built.stderr)")
        let ran = try CommandRunner.run(dir.path + "/roundtrip", [dir.path + "/out"])
        #expect(ran.status == 0, "\(ran.stderr)")
        for (name, text) in texts {
            let back = FileManager.default.contents(atPath: dir.path + "/out/" + name).map { [UInt8]($0) }
            #expect(back == Array(text.utf8), "\(name)")
        }
    }

    @Test func aFileThatIsNotUTF8OrNotAPlainNameIsRefusedSayingWhich() throws {
        let dir = try TemporaryDirectory()
        FileManager.default.createFile(atPath: dir.path + "/latin1.js", contents: Data([0x63, 0xE9, 0x0A]))
        var r = try CommandRunner.run(Self.tool, [dir.path + "/out.swift", dir.path + "/latin1.js"])
        #expect(r.status == 1 && r.stderr.contains("latin1.js: is not UTF-8 text"), "\(r.stderr)")
        try dir.write("a page.js", "x")
        r = try CommandRunner.run(Self.tool, [dir.path + "/out.swift", dir.path + "/a page.js"])
        #expect(r.status == 1 && r.stderr.contains("a page.js: name a page file with ASCII letters"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out.swift"))
    }
}
