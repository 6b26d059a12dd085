import FlowdirTestSupport
import Foundation
import Testing

/// The built binary, end to end.
@Suite(.tags(.large), Tier.notQuick) struct CheckCommandTests {
    let fixtures = RepositoryPaths.root + "/Tests/FlowdirTemplatesTests/Fixtures/invalid"

    @Test func shippedTemplatesAreValidAndExitZero() throws {
        let r = try CommandRunner.flowdir(["check", "workflows/stylize-with-mask.jsonc", "workflows/parallel-variants.yaml",
                                           "workflows/review-and-render.yaml", "workflows/describe-image.json"],
                                          in: RepositoryPaths.root)
        #expect(r.status == 0)
        #expect(r.stdout == """
            ✓ workflows/stylize-with-mask.jsonc: valid (4 nodes, 4 edges)
            ✓ workflows/parallel-variants.yaml: valid (5 nodes, 6 edges)
            ✓ workflows/review-and-render.yaml: valid (4 nodes, 3 edges)
            ✓ workflows/describe-image.json: valid (3 nodes, 2 edges)

            """)
    }

    @Test func invalidExitsOneWithTheRenderedErrors() throws {
        let r = try CommandRunner.flowdir(["check", "unknown-node-from.yaml"], in: fixtures)
        #expect(r.status == 1)
        #expect(r.stdout == """
            unknown-node-from.yaml:11:14: error[unknownNode]: edge 'laod.image -> mask1.image' refers to node 'laod', which does not exist
             11 |   - { from: [laod, image], to: [mask1, image] }
                |              ^
              hint: did you mean 'load'?
            ✗ unknown-node-from.yaml: 1 error

            """)
    }

    @Test func unreadableExitsTwoAndWinsOverInvalid() throws {
        var r = try CommandRunner.flowdir(["check", "no-such-file.yaml"], in: fixtures)
        #expect(r.status == 2)
        #expect(r.stdout.contains("no-such-file.yaml: error[unreadableFile]: no-such-file.yaml cannot be read: no-such-file.yaml: no such file"))
        r = try CommandRunner.flowdir(["check", "duplicate-id.yaml", "no-such-file.yaml"], in: fixtures)
        #expect(r.status == 2)
        r = try CommandRunner.flowdir(["check"], in: fixtures)
        #expect(r.status == 64)
        #expect(r.stderr.contains("Missing expected argument"))
    }

    @Test func jsonOutputIsMachineReadable() throws {
        let r = try CommandRunner.flowdir(["check", "--json", "multi-producer-required.yaml", "../../../../workflows/parallel-variants.yaml"], in: fixtures)
        #expect(r.status == 1)
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        #expect(reports.count == 2)
        #expect(reports[0]["valid"] as? Bool == false)
        let d = try #require((reports[0]["diagnostics"] as? [[String: Any]])?.first)
        #expect(d["code"] as? String == "multiProducerOnRequiredPort")
        #expect(d["line"] as? Int == 15)
        #expect(d["column"] as? Int == 5)
        #expect(d["severity"] as? String == "error")
        #expect(reports[1]["valid"] as? Bool == true)
        #expect(reports[1]["nodes"] as? Int == 5)
    }

    @Test func colourOnlyOnATerminalAndNeverWithNoColor() throws {
        // `script` gives the command a pseudo-terminal.
        let command = "\(RepositoryPaths.flowdirExecutable) check unknown-node-from.yaml"
        var r = try CommandRunner.run("/usr/bin/script", ["-qec", command, "/dev/null"], in: fixtures, environment: ["TERM": "xterm"])
        #expect(r.stdout.contains("\u{1B}[1;31merror[unknownNode]\u{1B}[0m"))
        r = try CommandRunner.run("/usr/bin/script", ["-qec", command, "/dev/null"], in: fixtures, environment: ["TERM": "xterm", "NO_COLOR": "1"])
        #expect(!r.stdout.contains("\u{1B}["))
        #expect(r.stdout.contains("error[unknownNode]"))
        r = try CommandRunner.flowdir(["check", "unknown-node-from.yaml"], in: fixtures)
        #expect(!r.stdout.contains("\u{1B}["))
    }

    @Test func helpDocumentsExitCodes() throws {
        let r = try CommandRunner.flowdir(["check", "--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("Exit codes: 0 all valid"))
    }
}

@Suite(.tags(.large), Tier.notQuick) struct TemplatesCommandTests {
    @Test func listsTheShippedTemplates() throws {
        let r = try CommandRunner.flowdir(["templates"], in: RepositoryPaths.root, environment: ["XDG_CONFIG_HOME": "/nonexistent"])
        #expect(r.status == 0)
        #expect(r.stdout == """
            NAME                    NODES  STATUS  PATH
            Describe an image           3  valid   workflows/describe-image.json
            Parallel variants           5  valid   workflows/parallel-variants.yaml
            Review and render           4  valid   workflows/review-and-render.yaml
            Stylize with user mask      4  valid   workflows/stylize-with-mask.jsonc

            """)
    }

    @Test func jsonAndInvalidTemplates() throws {
        let dir = RepositoryPaths.root + "/Tests/FlowdirTemplatesTests/Fixtures/invalid"
        let r = try CommandRunner.flowdir(["templates", "--json", dir])
        #expect(r.status == 0)
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        #expect(entries.count >= 40)
        #expect(entries.allSatisfy { $0["valid"] as? Bool == false })
        let cycle = try #require(entries.first { $0["name"] as? String == "cycle-three" })
        #expect(cycle["status"] as? String == "1 error, 4 warnings")
    }

    @Test func aMissingFolderIsAClearError() throws {
        let r = try CommandRunner.flowdir(["templates", "/no/such/dir"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("/no/such/dir is not a directory"))
    }
}
