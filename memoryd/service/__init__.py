"""Running memoryd under the user's service manager: systemd on Linux, launchd on macOS.

`install` writes and enables the unit or LaunchAgent; `activation` takes over a listening socket
that systemd opened for the daemon (socket activation).
"""
