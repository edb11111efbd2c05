#include <stdio.h>

int mod065(int x)
{
    return x + 65;
}
