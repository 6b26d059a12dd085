import FlowdirCore
import FlowdirIO
@testable import FlowdirRuntime
import FlowdirTestSupport
import Foundation
import Testing

/// A remote job's outputs exist once, where the job left them (a Slurm job
/// writes into the run's work folder): taking them into `out/` must leave
/// them there until that is committed, or a kill -9 in between makes the
/// reattached job "succeed" without its outputs.
@Suite(.tags(.medium)) struct RemoteOutputsTests {
    @Test func aRemoteRunsOutputsStayInItsWorkFolderUntilTheCommit() throws {
        let flow = try RemoteFlow()
        let rt = try InstanceRuntime(open: try OpenInstance.open(flow.instance, purpose: "test"), now: Timestamp(seconds: 0))
        defer { try? rt.open.close() }
        let node = try #require(rt.graph.node("gen"))
        let work = flow.instance + "/.flowdir/work/gen.1"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try "made once\n".write(toFile: work + "/out.txt", atomically: false, encoding: .utf8)
        guard case .success(let collected) = Outputs.collect(rt, node: node, workDir: work, run: 1) else {
            Issue.record("not collected")
            return
        }
        #expect(!collected.workDirectoryMoved)
        #expect(try String(contentsOfFile: work + "/out.txt", encoding: .utf8) == "made once\n")
        #expect(try String(contentsOfFile: flow.instance + "/nodes/gen/out/out.txt", encoding: .utf8) == "made once\n")
        #expect(collected.records.map(\.file) == ["out/out.txt"])
    }
}
