import FlowdirTestSupport
import Foundation
import Testing

/// What the `flowdir` executable itself sets up, apart from any command.
@Suite(.tags(.large), Tier.notQuick) struct ExecutableTests {
    /// libgit2's call to load the CA bundle reaches flowdir's own loader
    /// (`SkipCABundle.swift`), which loads nothing, and libgit2 works on:
    /// the instance is made and committed. glibc's loader says where each
    /// symbol bound (LD_DEBUG=bindings).
    @Test func libgit2LoadsNoCABundleAndStillWorks() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try dir.write("wf/tools/Tool.yaml", "kind: Tool\noutputs: { out: TextRef }\nrun:\n  command: [touch, \"{outputs.out}\"]\n")
            try dir.write("wf/one.yaml", "schema: app.workflow/v2\nname: One\nnodes:\n  - { id: a, kind: Tool }\n")
            let r = try CommandRunner.flowdir(["new", "wf/one.yaml", "inst"], in: dir.path,
                                              environment: ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": "",
                                                            "LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": dir.path + "/ld"])
            #expect(r.status == 0, "\(r.stderr)")
            let log = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("ld.") }
                .map { try String(contentsOfFile: dir.path + "/" + $0, encoding: .utf8) }.joined()
            let bindings = log.split(separator: "\n").filter { $0.contains("libgit2") && $0.hasSuffix("`mbedtls_x509_crt_parse_file'") }
            #expect(bindings.count == 1, "\(bindings)")
            #expect(bindings.allSatisfy { $0.contains(" to \(RepositoryPaths.flowdirExecutable) [0]") }, "\(bindings)")
            let head = try CommandRunner.run("/usr/bin/git", ["-C", dir.path + "/inst", "log", "--format=%s"])
            #expect(head.status == 0 && !head.stdout.isEmpty, "\(head.stdout)\(head.stderr)")
        }
    }

    /// The job-API client (async-http-client, for its `URL`) brings
    /// Foundation in; its networking and XML parts, and their libcurl and
    /// libxml2, stay out: HTTP goes through SwiftNIO. A test build links
    /// Swift's libraries as shared ones, so `ldd` names what is in.
    @Test func linksNoFoundationNetworkingOrXML() throws {
        let r = try CommandRunner.run("/usr/bin/ldd", [RepositoryPaths.flowdirExecutable])
        #expect(r.status == 0, "\(r.stderr)")
        let libraries = r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(libraries.contains { $0.hasPrefix("libgit2") }, "\(r.stdout)")
        let heavy = libraries.filter { ["libFoundationNetworking", "libFoundationXML", "libcurl", "libxml2"].contains(where: $0.hasPrefix) }
        #expect(heavy.isEmpty, "\(heavy)")
    }
}
