#if canImport(Glibc)
import Glibc
#endif

/// Where things are when tests run from this checkout.
public enum RepositoryPaths {
    /// The package root, found from this source file's path.
    public static let root: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    public static var workflows: String { root + "/workflows" }

    /// The folder the test binary was built into; the `flowdir` executable
    /// sits beside it.
    public static let productsDirectory: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        var dir = String(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)])
        // xctest bundles on Linux are plain executables; on a bundle path, step out.
        while dir.hasSuffix(".xctest") || dir.contains(".xctest/") {
            dir = String(dir[..<dir.lastIndex(of: "/")!])
        }
        return dir
    }()

    public static var flowdirExecutable: String { productsDirectory + "/flowdir" }
}
