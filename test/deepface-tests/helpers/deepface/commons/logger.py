"""Logger: the four levels the tests call, on Python's logging (name "deepface")."""
import logging


class Logger:
    def __init__(self) -> None:
        self._log = logging.getLogger("deepface")

    def info(self, message: object) -> None:
        self._log.info(message)

    def debug(self, message: object) -> None:
        self._log.debug(message)

    def warn(self, message: object) -> None:
        self._log.warning(message)

    def error(self, message: object) -> None:
        self._log.error(message)
