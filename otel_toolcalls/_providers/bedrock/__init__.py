"""AWS Bedrock: ConverseStream and InvokeModelWithResponseStream, botocore and aiobotocore."""
