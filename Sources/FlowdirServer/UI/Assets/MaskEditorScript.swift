extension UIAssets {
    static let maskJS = ##"""
"""##
}
