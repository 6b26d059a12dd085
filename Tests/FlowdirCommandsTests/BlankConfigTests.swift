#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Issue 31, item 9: an empty or comment-only config is a valid config with
/// every default (docs/commands.md, "Config"), for every command; a broken one names its
/// file and says what to do.
@Suite(.tags(.large), Tier.notQuick) struct BlankConfigTests {
    func setUp() throws -> (TemporaryDirectory, [String: String]) { try CommandFixture.onePicker() }

    @Test(arguments: ["", "# nothing yet\n", "--- # flowdir config\n", "~\n", "%YAML 1.2\n---\n"])
    func aBlankConfigIsEveryDefaultForEveryCommand(_ text: String) throws {
        var (dir, env) = try setUp()
        try dir.write("config.yaml", text)
        env["FLOWDIR_CONFIG"] = dir.path + "/config.yaml"
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "inst"], in: dir.path, environment: env).status == 0)
        for args in [["ls", "."], ["status"], ["inbox", "."], ["show", "inst"]] {
            let r = try CommandRunner.flowdir(args, in: dir.path, environment: env)
            #expect(r.status == 0, "\(args) with config \(text.debugDescription): \(r.stderr)")
        }
    }

    @Test func aBrokenConfigNamesItsFileAndWhatToDo() throws {
        var (dir, env) = try setUp()
        try dir.write("cfg/flowdir/config.yaml", "roots: [\n")
        env["XDG_CONFIG_HOME"] = dir.path + "/cfg"
        let r = try CommandRunner.flowdir(["ls", "."], in: dir.path, environment: env)
        #expect(r.status == 1)
        #expect(r.stderr.contains(dir.path + "/cfg/flowdir/config.yaml:"), "\(r.stderr)")
        #expect(r.stderr.contains("hint: fix " + dir.path + "/cfg/flowdir/config.yaml"), "\(r.stderr)")
        #expect(!r.stderr.contains("template"), "a config is not a template: \(r.stderr)")
    }
}
