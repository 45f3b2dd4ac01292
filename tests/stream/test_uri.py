"""workspaceUri: a strict file: URI for POSIX and Windows paths, the platform simulated."""

from __future__ import annotations

import pytest
from kandev_lsp.platform import HostPlatform
from kandev_lsp.stream.uri import WorkspacePathError, workspace_uri

LINUX = HostPlatform("linux", "x86_64")
MAC = HostPlatform("darwin", "aarch64")
WINDOWS = HostPlatform("windows", "x86_64")


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("/home/me/project", "file:///home/me/project"),
        ("/home/me/my project", "file:///home/me/my%20project"),
        ("/", "file:///"),
        ("/work/ws/", "file:///work/ws"),
        ("/work/a/../b/./c", "file:///work/b/c"),
        ("//work/x", "file:///work/x"),
        ("/tmp/é/ü", "file:///tmp/%C3%A9/%C3%BC"),
        ("/tmp/a#b?c%d", "file:///tmp/a%23b%3Fc%25d"),
        (
            "/tmp/a:b;c=d,e+f&g$h!i'j(k)l*m@n[o]",
            "file:///tmp/a%3Ab%3Bc%3Dd%2Ce%2Bf%26g%24h%21i%27j%28k%29l%2Am%40n%5Bo%5D",
        ),
        ("/tmp/back\\slash", "file:///tmp/back%5Cslash"),
        ("/tmp/keep-_.~", "file:///tmp/keep-_.~"),
    ],
)
def test_posix_paths(path: str, uri: str) -> None:
    assert workspace_uri(path, LINUX) == uri
    assert workspace_uri(path, MAC) == uri


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("C:\\Users\\me\\project", "file:///C:/Users/me/project"),
        ("c:\\Users\\me\\my project", "file:///C:/Users/me/my%20project"),
        ("C:/Users/me/project/", "file:///C:/Users/me/project"),
        ("D:\\", "file:///D:/"),
        ("C:\\a\\..\\b\\.\\c", "file:///C:/b/c"),
        ("C:\\Users\\José\\#1", "file:///C:/Users/Jos%C3%A9/%231"),
        ("\\\\server\\share\\dir\\sub dir", "file://server/share/dir/sub%20dir"),
        ("\\\\server\\share", "file://server/share"),
        ("\\\\server\\share\\", "file://server/share"),
        ("//server/share/dir", "file://server/share/dir"),
        ("\\\\?\\C:\\very\\long", "file:///C:/very/long"),
        ("\\\\?\\UNC\\server\\share\\x", "file://server/share/x"),
    ],
)
def test_windows_paths(path: str, uri: str) -> None:
    assert workspace_uri(path, WINDOWS) == uri


@pytest.mark.parametrize("path", ["relative\\dir", "C:relative", "\\no-drive", "", "\\\\server"])
def test_windows_paths_that_are_not_absolute_are_refused(path: str) -> None:
    with pytest.raises(WorkspacePathError):
        workspace_uri(path, WINDOWS)


@pytest.mark.parametrize("path", ["relative/dir", "", "C:\\Users"])
def test_posix_paths_that_are_not_absolute_are_refused(path: str) -> None:
    with pytest.raises(WorkspacePathError):
        workspace_uri(path, LINUX)
