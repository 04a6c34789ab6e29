"""Test-only stand-ins, written for facecompute, for the three DeepFace helpers that DeepFace 0.0.100's
unit tests import besides ``DeepFace`` itself: ``deepface.commons.logger.Logger``,
``deepface.commons.image_utils.load_image_from_base64`` and
``deepface.modules.verification.find_distance``. test/deepface-tests.test.ts puts this folder on the
tests' PYTHONPATH so that the tests run without installing DeepFace (CI installs no DeepFace,
TensorFlow, PyTorch or dlib). Only what the tests call is here; ``DeepFace`` comes from facecompute.
"""
